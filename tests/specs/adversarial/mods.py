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
