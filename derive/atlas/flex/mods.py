"""Standard FlexAttention modifiers, written as users write them (after the PyTorch
FlexAttention post and attention-gym). ``derive check derive/atlas/flex/*.toml`` traces
each one and checks it against a hand-written spec."""

import torch


def generate_alibi_bias(H):
    """ALiBi: a per-head slope times the (negative) distance, from a factory."""
    alibi_slopes = torch.tensor([2.0 ** (-8.0 * (k + 1) / H) for k in range(H)])

    def alibi_mod(score, b, h, q_idx, kv_idx):
        bias = alibi_slopes[h] * (kv_idx - q_idx)
        return score + bias

    return alibi_mod


def generate_alibi_flipped(H):
    """ALiBi with the sign flipped, (q_idx - kv_idx) * slope: farther keys score higher."""
    alibi_slopes = torch.tensor([2.0 ** (-8.0 * (k + 1) / H) for k in range(H)])

    def alibi_flipped(score, b, h, q_idx, kv_idx):
        return score + (q_idx - kv_idx) * alibi_slopes[h]

    return alibi_flipped


def generate_tanh_softcap(soft_cap):
    """Gemma-2 style soft-capping of the logits."""

    def tanh_softcap(score, b, h, q_idx, kv_idx):
        return soft_cap * torch.tanh(score / soft_cap)

    return tanh_softcap


def generate_softcap_alibi(soft_cap, H):
    """Soft-capping, then ALiBi."""
    alibi_slopes = torch.tensor([2.0 ** (-8.0 * (k + 1) / H) for k in range(H)])

    def softcap_alibi(score, b, h, q_idx, kv_idx):
        capped = soft_cap * torch.tanh(score / soft_cap)
        return capped + alibi_slopes[h] * (kv_idx - q_idx)

    return softcap_alibi


def generate_relative_bias(max_len):
    """A learned relative-position bias table, indexed by q_idx - kv_idx."""
    rel_bias = torch.linspace(-1.0, 1.0, 2 * max_len - 1)

    def relative_bias(score, b, h, q_idx, kv_idx):
        return score + rel_bias[q_idx - kv_idx + max_len - 1]

    return relative_bias


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def generate_sliding_window(window):
    """Causal sliding window: the current key and the window - 1 before it."""

    def sliding_window(b, h, q_idx, kv_idx):
        causal_mask = q_idx >= kv_idx
        window_mask = q_idx - kv_idx < window
        return causal_mask & window_mask

    return sliding_window


def generate_prefix_lm_mask(prefix_length):
    """Prefix-LM: bidirectional over the first prefix_length tokens, causal after."""

    def prefix_lm(b, h, q_idx, kv_idx):
        return (kv_idx < prefix_length) | (q_idx >= kv_idx)

    return prefix_lm


def generate_doc_mask_mod(document_id):
    """Document masking: a query sees the keys of its own document (packed sequences)."""
    document_id = torch.tensor(document_id)

    def doc_mask(b, h, q_idx, kv_idx):
        return document_id[q_idx] == document_id[kv_idx]

    return doc_mask
