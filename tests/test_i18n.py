"""Both catalogues hold the same keys with the same placeholders, and every literal key in the code exists."""

import re
import string
from pathlib import Path

import pytest

from core.terms.i18n import LANGS, ONE, catalogue, normalize_lang, t

ROOT = Path(__file__).resolve().parent.parent


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_catalogues_have_the_same_keys():
    en, zh = set(catalogue("en")), set(catalogue("zh"))
    singular = {k for k in en if k.endswith(ONE)}  # English's singular twins: 中文 says both with one sentence
    assert not en - zh - singular, f"missing in zh: {sorted(en - zh - singular)[:20]}"
    assert not zh - en, f"missing in en: {sorted(zh - en)[:20]}"


def test_a_singular_twin_is_said_for_one_and_only_in_its_language():
    en = catalogue("en")
    for key in (k for k in en if k.endswith(ONE)):
        base = key.removesuffix(ONE)
        assert base in en and placeholders(en[key]) == placeholders(en[base]) and "{n}" in en[base], key
        assert "(s)" not in en[base] + en[key], key  # the twin is there so that neither needs it
    one, two = t("status.oom.banner", "en", n=1, notes="x"), t("status.oom.banner", "en", n=2, notes="x")
    assert one.startswith("1 point ran out") and two.startswith("2 points ran out")
    assert t("status.oom.banner", "zh", n=1, notes="x") == t("status.oom.banner", "zh", n=2, notes="x").replace(
        "2", "1", 1
    )


@pytest.mark.parametrize("lang", LANGS)
def test_placeholders_match_english(lang):
    en = catalogue("en")
    bad = [k for k, v in catalogue(lang).items() if placeholders(v) != placeholders(en[k])]
    assert not bad, f"placeholders differ from English in {lang}: {bad[:20]}"


def test_every_literal_key_used_in_the_code_exists():
    literal = re.compile(r"""\btr\(\s*["']([a-z_]+\.[a-zA-Z0-9_.]*[a-zA-Z0-9_])["']\s*[,)]""")
    used = set()
    for path in [*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "dashboard.py"]:
        used |= set(literal.findall(path.read_text(encoding="utf-8")))
    missing = sorted(k for k in used if k not in catalogue("en"))
    assert not missing, f"keys used but not in the catalogue: {missing}"
    assert len(used) > 100


def test_lookup_falls_back_and_marks_missing_keys():
    assert normalize_lang("zh-CN") == "zh" and normalize_lang("fr-FR") == "en" and normalize_lang(None) == "en"
    assert t("ui.run", "zh") == "运行" and t("ui.run", "en") == "Run"
    assert t("no.such.key", "zh") == "«no.such.key»"
    assert t("progress.counted", "en", done=1, total=2) == "1 of 2 done"


# ---- the glossary (docs/GLOSSARY.md): banned forms and terms spelled one way ---------------------------------------
GLOSSARY = ROOT / "docs" / "GLOSSARY.md"
NUMBER = r"(?:\{[^{}]*\}|[\d.,，]+|[一二两三四五六七八九十百千万]+|几十|几百|几千|几万|几|数十|数百|数千|许多|好几)"
# "A 是 B 的 N 倍" and "A 只有 B 的 1/N" say a ratio exactly; a verb of change before "N 倍" can be read as N or N + 1
RATIO = re.compile(
    r"(?:少|减少|降低|缩小|衰减|下降|减小|节省|省下|增加|增长|扩大|提高|提升|多|快|慢|大|小|高|低)了?\s*(?:约|大约)?\s*"
    + NUMBER
    + r"\s*多?\s*倍"
)
BANNED_ZH = {  # pattern -> what the glossary says instead
    RATIO.pattern: "是……的 N 倍 / 只有……的 1/N",
    r"增加多少|增加了多少": "是……的几倍",
    r"步链": "依赖步",
    r"电报纸带": "(a plain image: 一个词元接一个词元地读)",
    r"均匀瞎猜": "均匀随机猜测",
    r"按存储逐一计数": "同一块存储只计一次",
    r"屋顶线": "Roofline 模型",
    r"保持忙碌": "算力利用率",
    r"内存守卫": "内存保护",
    r"热身": "预热",
    r"缩放指数": "增长指数",
    r"模块": "块",
    r"(?<!梯度)检查点": "模型权重文件 (检查点 is 梯度检查点)",
    r"激活(?!值|函数)": "激活值",
    r"等(?!人)\s*[，,（(]?\s*(?:19|20)\d\d|等人\s(?:19|20)\d\d": "等人（年份） / （……等人，年份）",
    r"\b[A-Za-z][a-z]+\s(?:19|20)\d\d\b": "作者（年份） / （作者，年份）",
}
BANNED_EN = {
    r"et al\. (?:19|20)\d\d": "et al. (year) / (… et al., year)",
    r"\b[A-Z][a-z]+ (?:19|20)\d\d\b": "Name (year) / (Name, year)",
    r"\d×\*{0,2} less\b": "1/N of",
}
# 词 where the English says token: the glossary keeps 词 for a word of an example sentence (名字, 填充词, she)
BARE_CI = re.compile(r"(?<![名填充单代提])词(?![元表汇嵌])")


def _outside_code(text: str) -> str:
    return re.sub(r"`[^`]*`", "", text)


def zh_problems(zh: str, en: str = "") -> list[str]:
    """What in one Chinese catalogue value breaks the glossary (empty: nothing)."""
    text = _outside_code(zh)
    found = [f"{m.group(0)!r} → {fix}" for p, fix in BANNED_ZH.items() for m in re.finditer(p, text)]
    if '"' in text:
        found.append("ASCII quote → “”")
    if "LayerNorm" in text.replace("层归一化（LayerNorm）", ""):
        found.append("LayerNorm without 层归一化（LayerNorm）")
    if re.search(r"\btokens?\b", en) and not re.search(r"\bwords?\b", en) and BARE_CI.search(text):
        found.append("词 for token → 词元")
    return found


def en_problems(en: str) -> list[str]:
    text = _outside_code(en)
    return [f"{m.group(0)!r} → {fix}" for p, fix in BANNED_EN.items() for m in re.finditer(p, text)]


def test_chinese_follows_the_glossary():
    en = catalogue("en")
    bad = {k: p for k, v in catalogue("zh").items() if (p := zh_problems(v, en[k]))}
    assert not bad, f"zh values that break docs/GLOSSARY.md: {bad}"


def test_english_follows_the_glossary():
    bad = {k: p for k, v in catalogue("en").items() if (p := en_problems(v))}
    assert not bad, f"en values that break docs/GLOSSARY.md: {bad}"


@pytest.mark.parametrize(
    "zh, en",
    [
        ("LSTM 的梯度衰减了 {reach_factor} 倍", ""),
        ("每多一层，大约少 {factor} 倍", ""),
        ("内存会增加多少？", ""),
        ("比循环快 3 倍", ""),
        ("慢 {ratio} 倍", ""),
        ("节省 10 倍内存", ""),
        ("得分表扩大 4,096 倍", ""),
        ("快几十倍乃至更多", ""),
        ('"she" 在看哪里？', ""),
        ("受依赖步链限制", ""),
        ("均匀瞎猜的损失", ""),
        ("按屋顶线模型", ""),
        ("被内存守卫拒绝", ""),
        ("约为热身后的两倍", ""),
        ("拟合的缩放指数", ""),
        ("Transformer 模块", ""),
        ("自带检查点", ""),
        ("为反向保存的激活（BPTT）", ""),
        ("残差连接和 LayerNorm", ""),
        ("Vaswani 等 2017", ""),
        ("Xiong 等（2020）", ""),
        ("Feng 等人 2024", ""),
        ("第 *t* 个词之后的状态", "the state after token *t*"),
    ],
)
def test_the_glossary_check_catches_a_bad_string(zh, en):
    assert zh_problems(zh, en)


@pytest.mark.parametrize(
    "zh, en",
    [
        ("Transformer 的耗时是融合 LSTM 的 {ratio} 倍", ""),
        ("降到 k = 1 处的 1/{reach_factor} 以下", ""),
        ("约 4 倍——得分表是 n × n 的", ""),
        ("上下文翻一倍，表中的格子就变成四倍", ""),
        ("梯度检查点（Gradient Checkpointing）", ""),
        ("层归一化（LayerNorm）控制尺度；再用层归一化", ""),
        ("为反向保存的激活值", ""),
        ("Vaswani 等人（2017）；（Xiong 等人，2020）；arXiv 2410.01201", ""),
        ("名字到“she”的距离；填充词", 'Distance from the name to "she" (tokens)'),
        ("第 {pos} 个词，往前 {d} 个词", "word {pos}, {d} words back"),
        ('运行 `python -m core checkpoints`，文件 `"x"`', ""),
        ("分块形式，64 个词元一块", ""),
    ],
)
def test_the_glossary_check_passes_a_good_string(zh, en):
    assert not zh_problems(zh, en)


def test_the_english_check_catches_and_passes():
    assert en_problems("Vaswani et al. 2017") and en_problems("Heinsen 2023") and en_problems("about 4× less")
    assert not en_problems("Vaswani et al. (2017); (Xiong et al., 2020); arXiv 2410.01201; Amdahl's law (1967)")


def test_the_glossary_names_every_banned_term():
    text = GLOSSARY.read_text(encoding="utf-8")
    for word in ("步链", "电报纸带", "均匀瞎猜", "按存储逐一计数", "屋顶线模型", "内存守卫", "热身", "缩放指数", "模块",
                 "检查点", "激活值", "层归一化", "词元", "显存", "隐状态", "算力利用率", "是……的 N 倍", "只有……的 1/N"):  # fmt: skip
        assert word in text, f"docs/GLOSSARY.md does not mention {word}"


def test_thread_counts_read_as_words_and_a_left_core_is_explained():
    from core.terms.i18n import device_words, threads_words, translator

    en, zh = translator("en"), translator("zh")
    assert threads_words(1, en) == "1 thread" and threads_words(2, en) == "2 threads"
    assert threads_words(1, en, cores=2) == "1 thread (of 2 cores: one is left to the app's server and your browser)"
    assert threads_words(2, en, cores=2) == "2 threads"  # every core measuring: nothing to explain
    assert threads_words(1, zh, cores=2).startswith("1 个线程（共 2 个核心")
    assert device_words("cpu · Intel Xeon · 1 threads", en) == "cpu · Intel Xeon · 1 thread"
    assert device_words("cpu · Intel Xeon · 2 threads", zh) == "cpu · Intel Xeon · 2 个线程"


def test_large_whole_numbers_read_with_separators_unless_the_sentence_formats_them():
    import numpy as np

    said = t("answers.take.headline", "en", mixer="x", n=np.int64(16384), how="y")
    assert "n = 16,384" in said
    assert "n = 512" in t("answers.take.headline", "en", mixer="x", n=512, how="y")  # short: as it is
    assert "n = 4,096" in t("answers.take.headline", "en", mixer="x", n=4096, how="y")
    said = t("depth.take.diverged_item", "en", model="m", L=2, seed=12345, step=1500)
    assert "seed 12345" in said and "step 1,500" in said  # a seed is a name, not an amount
    kept = t("attention_cost.take.ratio", "en", n=16384, naive_mem="a", sdpa_mem="b", mem_ratio=12345, naive_ms=3.0,
             sdpa_ms=2.0, time_ratio=1.5, backend="math")  # fmt: skip
    assert "n = 16,384" in kept and "12345×" in kept  # {mem_ratio:.0f} says its own format


def test_a_chart_subtitle_wraps_between_devices_and_between_chinese_characters():
    from core.charts.common import SUBTITLE_WIDTH, _width, subtitle_lines, title

    two = "cpu · Intel(R) Xeon(R) Processor · 2 threads | cpu · Intel(R) Xeon(R) Processor · 1 thread"
    assert subtitle_lines(two) == [
        "cpu · Intel(R) Xeon(R) Processor · 2 threads |",
        "cpu · Intel(R) Xeon(R) Processor · 1 thread",
    ]
    assert subtitle_lines("cpu · 2 threads | cuda · H200") == ["cpu · 2 threads | cuda · H200"]  # fits: one line
    zh = "按批次测量。灰色虚线：log V，均匀猜测的损失（公式）；灰色点线：最好的可能损失，即链的熵（公式）。cpu · 1 线程"
    lines = subtitle_lines(zh)
    assert len(lines) == 2 and "".join(lines).replace(" ", "") == zh.replace(" ", "")  # nothing lost, no word split
    assert all(_width(line) <= SUBTITLE_WIDTH for line in lines) and _width(lines[0]) > SUBTITLE_WIDTH - 2
    long = title("Utilisation: achieved FLOP/s as a share of the best matmul rate measured beside the run").to_dict()
    assert long["text"] == [
        "Utilisation: achieved FLOP/s as a share of the best",
        "matmul rate measured beside the run",
    ]
    assert title("Training throughput").to_dict()["text"] == "Training throughput"  # a short one stays a string
