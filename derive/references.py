"""The sources documents cite, as data: one entry per work, cited from prose as ``{cite:KEY}``.

A citation prints author and year, "(Miller, 2023)"; ``{cite:KEY1,KEY2}`` cites several
works in one parenthesis. Each document lists the works it cites in a References section,
sorted by author and year. An unknown key stops the build (see
:meth:`derive.document.api.Document.resolve`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REFERENCES", "Reference", "citation", "entry", "markdown_section", "ordered"]


@dataclass(frozen=True)
class Reference:
    key: str
    authors: str  # as printed in the list
    short: str  # as printed in a citation: "Miller", "Dao et al."
    year: str
    title: str
    where: str  # venue, publisher or site
    url: str = ""


def _ref(key, authors, short, year, title, where, url=""):
    return key, Reference(key, authors, short, year, title, where, url)


REFERENCES: dict[str, Reference] = dict([
    _ref("qkbias-article", "", "Q/K-bias article", "",
         "Q bias and K bias in scaled dot-product attention (our description: the copy used here carries no title)",
         "A web article in Japanese, the second of a series after one on Q, K, V and the KV cache, with a script "
         "verify_attention_bias.py and its eight checks (run with Python 3.9.6) and the worked example's table; "
         "its author, title and address are not known to this project, which has its text as a plain-text copy"),
    _ref("offbyone-summary", "", "Japanese summary", "",
         "A summary in Japanese of “Attention is off by one” and of its Hacker News discussion",
         "Web page; author, title and address not known to this project, which has its text as a plain-text copy "
         "(the source of the discussion's comments quoted here)"),
    _ref("hn-offbyone", "Hacker News users", "Hacker News discussion", "2023",
         "Discussion of “Attention is off by one”", "Hacker News",
         "https://news.ycombinator.com/item?id=36851494"),
    _ref("informer-softmax-one", "helloboge", "helloboge/Informer", "",
         "models/softmax_one.py: softmax_one, which subtracts the row maximum and then adds 1 to the denominator",
         "GitHub repository, commit 6ac165c",
         "https://github.com/helloboge/Informer/blob/6ac165cc90eff2eca58bd5c5c33ba529a4ce676d/models/softmax_one.py"),
    _ref("vaswani2017", "A. Vaswani, N. Shazeer, N. Parmar, J. Uszkoreit, L. Jones, A. N. Gomez, Ł. Kaiser, "
         "I. Polosukhin", "Vaswani et al.", "2017", "Attention is all you need",
         "Advances in Neural Information Processing Systems 30", "https://arxiv.org/abs/1706.03762"),
    _ref("miller2023", "E. Miller", "Miller", "2023", "Attention is off by one", "evanmiller.org",
         "https://www.evanmiller.org/attention-is-off-by-one.html"),
    _ref("pytorch-mha", "PyTorch contributors", "PyTorch documentation", "",
         "torch.nn.MultiheadAttention: the add_bias_kv and add_zero_attn options",
         "PyTorch documentation", "https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html"),
    _ref("flaxformer", "Google Research", "flaxformer", "",
         "flaxformer: Transformer architectures in JAX/Flax (dense attention with an optional extra logit in "
         "the softmax denominator)", "source code", "https://github.com/google/flaxformer"),
    _ref("gpt-oss2025", "OpenAI", "OpenAI", "2025", "gpt-oss-120b and gpt-oss-20b model card "
         "(attention sinks: a learned per-head logit in the softmax denominator)", "arXiv",
         "https://arxiv.org/abs/2508.10925"),
    _ref("xiao2024", "G. Xiao, Y. Tian, B. Chen, S. Han, M. Lewis", "Xiao et al.", "2024",
         "Efficient streaming language models with attention sinks",
         "International Conference on Learning Representations", "https://arxiv.org/abs/2309.17453"),
    _ref("gemma2-2024", "Gemma Team", "Gemma Team", "2024",
         "Gemma 2: improving open language models at a practical size (logit soft-capping)", "arXiv",
         "https://arxiv.org/abs/2408.00118"),
    _ref("bondarenko2023", "Y. Bondarenko, M. Nagel, T. Blankevoort", "Bondarenko et al.", "2023",
         "Quantizable transformers: removing outliers by helping attention heads do nothing (clipped softmax)",
         "Advances in Neural Information Processing Systems 36", "https://arxiv.org/abs/2306.12929"),
    _ref("milakov2018", "M. Milakov, N. Gimelshein", "Milakov and Gimelshein", "2018",
         "Online normalizer calculation for softmax", "arXiv", "https://arxiv.org/abs/1805.02867"),
    _ref("dao2022", "T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré", "Dao et al.", "2022",
         "FlashAttention: fast and memory-efficient exact attention with IO-awareness",
         "Advances in Neural Information Processing Systems 35", "https://arxiv.org/abs/2205.14135"),
    _ref("dao2023", "T. Dao", "Dao", "2023",
         "FlashAttention-2: faster attention with better parallelism and work partitioning",
         "International Conference on Learning Representations (2024)", "https://arxiv.org/abs/2307.08691"),
    _ref("flash-decoding2023", "T. Dao, D. Haziza, F. Massa, G. Sizov", "Dao et al.", "2023",
         "Flash-Decoding for long-context inference (split-KV attention merged by log-sum-exp)",
         "Stanford CRFM blog", "https://crfm.stanford.edu/2023/10/12/flashdecoding.html"),
    _ref("su2021", "J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu", "Su et al.", "2021",
         "RoFormer: enhanced transformer with rotary position embedding", "arXiv",
         "https://arxiv.org/abs/2104.09864"),
    _ref("press2022", "O. Press, N. A. Smith, M. Lewis", "Press et al.", "2022",
         "Train short, test long: attention with linear biases enables input length extrapolation (ALiBi)",
         "International Conference on Learning Representations", "https://arxiv.org/abs/2108.12409"),
    _ref("dehghani2023", "M. Dehghani et al.", "Dehghani et al.", "2023",
         "Scaling vision transformers to 22 billion parameters (QK normalization)",
         "International Conference on Machine Learning", "https://arxiv.org/abs/2302.05442"),
    _ref("raffel2020", "C. Raffel, N. Shazeer, A. Roberts, K. Lee, S. Narang, M. Matena, Y. Zhou, W. Li, "
         "P. J. Liu", "Raffel et al.", "2020",
         "Exploring the limits of transfer learning with a unified text-to-text transformer (T5; relative "
         "position bias)", "Journal of Machine Learning Research 21", "https://arxiv.org/abs/1910.10683"),
    _ref("yang2024", "A. Yang et al.", "Yang et al.", "2024", "Qwen2 technical report", "arXiv",
         "https://arxiv.org/abs/2407.10671"),
    _ref("radford2019", "A. Radford, J. Wu, R. Child, D. Luan, D. Amodei, I. Sutskever", "Radford et al.", "2019",
         "Language models are unsupervised multitask learners (GPT-2)", "OpenAI"),
    _ref("ramapuram2025", "J. Ramapuram et al.", "Ramapuram et al.", "2025",
         "Theory, analysis, and best practices for sigmoid self-attention",
         "International Conference on Learning Representations", "https://arxiv.org/abs/2409.04431"),
    _ref("zuhri2025", "Z. M. K. Zuhri, E. H. Fuadi, A. F. Aji", "Zuhri et al.", "2025",
         "Softpick: no attention sink, no massive activations with rectified softmax", "arXiv",
         "https://arxiv.org/abs/2504.20966"),
    _ref("nakanishi2025", "K. M. Nakanishi", "Nakanishi", "2025",
         "Scalable-Softmax is superior for attention", "arXiv", "https://arxiv.org/abs/2501.19399"),
    _ref("tan2024", "S. Tan, S. Yang, A. Courville, R. Panda, Y. Shen", "Tan et al.", "2024",
         "Scaling stick-breaking attention: an efficient implementation and in-depth study", "arXiv",
         "https://arxiv.org/abs/2410.17980"),
    _ref("wortsman2023", "M. Wortsman, J. Lee, J. Gilmer, S. Kornblith", "Wortsman et al.", "2023",
         "Replacing softmax with ReLU in vision transformers (ReLU divided by the sequence length)", "arXiv",
         "https://arxiv.org/abs/2309.08586"),
])


def citation(keys: list[str]) -> str:
    """``(Miller, 2023)`` or ``(Dao et al., 2022; Dao, 2023)``; a work without a year by its short name."""
    parts = (f"{REFERENCES[k].short}, {REFERENCES[k].year}" if REFERENCES[k].year else REFERENCES[k].short
             for k in keys)
    return "(" + "; ".join(parts) + ")"


def ordered(keys) -> list[Reference]:
    """The works of ``keys``, once each, sorted by the name they are cited by, then year."""
    return sorted({REFERENCES[k] for k in keys}, key=lambda r: (r.short.lower().removeprefix("the "), r.year))


def entry(ref: Reference) -> dict:
    """The fields of one entry of the References section; ``text`` is Markdown (title in italics)."""
    head = f"{ref.authors} ({ref.year})." if ref.authors and ref.year else (f"{ref.authors}." if ref.authors else "")
    text = " ".join(p for p in (head, f"*{ref.title}*.", f"{ref.where}.") if p)
    return {"key": ref.key, "authors": ref.authors, "year": ref.year, "title": ref.title,
            "where": ref.where, "url": ref.url, "text": text}


def markdown_section(keys, notes: dict[str, str] | None = None) -> str:
    """``## References`` in Markdown, for documents written as Markdown directly (atlas, impl-check)."""
    lines = ["## References", ""]
    for r in ordered(keys):
        e = entry(r)
        note = f" {notes[r.key]}" if notes and r.key in notes else ""
        lines.append(f"- {e['text']}{note}" + (f" <{e['url']}>" if e["url"] else ""))
    return "\n".join(lines) + "\n"
