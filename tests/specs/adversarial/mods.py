"""FlexAttention modifiers of the adversarial corpus."""
import torch


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def strictly_later(b, h, q_idx, kv_idx):
    return kv_idx > q_idx


def later_or_same(b, h, q_idx, kv_idx):
    return kv_idx >= q_idx


def row_shift(score, b, h, q_idx, kv_idx):
    return score + q_idx * 0.25


def later_plus_one(score, b, h, q_idx, kv_idx):
    return torch.where(kv_idx < q_idx, score + 1, score)


def softcap30(score, b, h, q_idx, kv_idx):
    return 30 * torch.tanh(score / 30)


def window3(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() < 3


def alibi_half(score, b, h, q_idx, kv_idx):
    return score + (kv_idx - q_idx) * 0.5


_zero_slope = torch.tensor([0.0, 0.5])
_signed_slope = torch.tensor([0.5, -0.25])


def alibi_zero_slope(score, b, h, q_idx, kv_idx):
    return score + (kv_idx - q_idx) * _zero_slope[h]


def alibi_signed_slope(score, b, h, q_idx, kv_idx):
    return score + (kv_idx - q_idx) * _signed_slope[h]


def step_penalty(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx - kv_idx > 2, score - 1, score)


def step_bonus(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx - kv_idx > 2, score + 1, score)


def _alibi(values):
    slopes = torch.tensor(values)

    def mod(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    return mod


heads_a = _alibi([0.5, 0.25])
heads_a_again = _alibi([0.5, 0.25])
heads_b = _alibi([0.5, 0.125])


_caps = torch.tensor([30.0, 50.0])


def heads_cap(score, b, h, q_idx, kv_idx):
    return _caps[h] * torch.tanh(score / _caps[h])
