"""Words and facts (#31): one term per concept in 中文, no 倍 shape the glossary bans, and Chinese punctuation in the
sentences code assembles — every takeaway, verdict and home-page finding rendered in 中文 from the shipped
reference data (data/reference/) and scanned, since a catalogue check never sees what code joins together."""

import functools
import re

import pytest

from core.experiments import EXPERIMENTS
from core.findings import scaling as scaling_findings
from core.findings import serial as serial_findings
from core.findings import verdicts
from core.home import records as home
from core.home import scoreboard
from core.store.results import load_reference
from core.terms.i18n import catalogue, t

# ---- one form per concept: the chapter's term, or the glossary's (docs/GLOSSARY.md) -------------------------------
NUMBER = r"(?:\{[^{}]*\}|[\d.,，/]+|[一二两三四五六七八九十百千万]+|几十|几百|几千|几|数十|数百)"
TERMS_ZH = {  # concept -> (the one form, what must not appear); docs/GLOSSARY.md §1 gives each its reason
    "recurrent neural network": ("循环神经网络", r"循环网络"),
    "hidden state of a recurrence": ("隐状态", r"(?<![隐细胞])状态向量|(?:上一个|前一个|每一步的|固定大小的)状态"),
    "a recurrent model's fixed-size state": ("固定大小的隐状态", r"固定的?隐状态|固定状态"),
    "LSTM cell state (ch.)": ("细胞状态", r"记忆单元|记忆细胞"),
    "recurrence, h_t from h_{t−1}": ("递推", r"线性循环"),
    "Adam's moment estimates": ("一阶矩和二阶矩估计", r"动量"),
    "a value over the seeds": ("各种子中的最低值 / 最高值", r"最[低高]的种子"),
    "a gradient's reach": ("回传距离 / 梯度能回传多远", r"传播距离|(?<!回)传多远|往回传"),
    "multi-query (associative) recall": ("多查询联想回忆", r"多查询回忆"),
    "a ratio (glossary §2), shapes the glossary check misses": (
        "是……的 N 倍 / 只有……的 1/N / 不到……的 N 倍",
        r"(?:快|慢|大|小|多|少|高|低)了?\s*(?:不到|不足|将近|近|超过|逾|至少|最多|几乎)\s*" + NUMBER + r"\s*多?\s*倍"
        r"|(?:节省|节约|减少|降低|缩小|压缩|下降|增加|提高|提升|加快|扩大)(?:了|的)?倍数",
    ),
    "what the chapter names (three defects; page 4 is attention's price)": ("三个结构性缺陷", r"四个限制|四堵墙"),
    "a claim with its source (Chen et al., 2016)": ("Chen 等人（2016）", r"教材的预期"),
    "attention scores, their n × n matrix (ch. 注意力分数)": (
        "注意力分数 / 注意力分数矩阵",
        r"得分矩阵|得分表|打分|(?<!注意力)(?<!百)分数",
    ),
    "the textbook chapter (the lab is not the chapter)": ("教材 / 本章", r"教材章节"),
    "head size, head_dim": ("头维度", r"头大小|头尺寸"),
    "KV head (keys and values shared by query heads)": ("KV 头", r"K/V\s*头|键值头"),
    "the attention map (long-range page)": ("注意力热力图", r"注意力图"),
    "the layer that maps to the vocabulary": ("输出层", r"输出头"),
    "the standard Transformer (vanilla)": ("标准 Transformer", r"原始\s*Transformer"),
    "the operating system's kernel (not a GPU kernel)": ("操作系统内核", r"(?<!操作系统)内核[^。；]{0,12}清零"),
    "a vector lane (SIMD, a warp's lanes)": ("向量单元", r"条通道|向量通道"),
    "the amount of arithmetic": ("计算量", r"运算量"),
    "a trade-off": ("权衡", r"交换"),
    "reference results (shipped runs)": ("参考结果", r"参考数据"),
    "residual stream; the skip path around a layer": ("残差流 / 跳跃连接", r"残差通路|跳跃通路"),
    "the copy probe (real text)": ("复制探针", r"重复探针"),
    "microseconds": ("微秒", r"µs|μs"),
    "measuring it yourself": ("亲手", r"亲自"),
    "units of work a run counts": ("项", r"份工作"),
    "the matmul ceiling measured during the run": ("运行期间实测", r"运行旁"),
    "paired repeats": ("配对重复测量", r"交替重复测量|配对重复(?:之间|的范围|中|：)"),
    "shipped with the lab (files, weights, reference)": ("随实验室附带的", r"自带"),
    "growth as a power of n": ("按 n^b 增长", r"随\s*n\^"),
}
TERMS_EN = {
    "what the chapter names": r"four limits",
    "a claim with its source": r"textbook's expectation",
}
TERMS_EN_ONE_WORD = {
    "the n × n matrix of scores (score matrix, as 中文 says 注意力分数矩阵)": r"score table|table of scores|n × n table"
}


def term_problems(text: str) -> list[str]:
    text = re.sub(r"`[^`]*`", "", text)
    return [f"{m.group(0)!r} → {good} ({concept})" for concept, (good, bad) in TERMS_ZH.items()
            for m in re.finditer(bad, text)]  # fmt: skip


def test_each_concept_has_one_chinese_term():
    bad = {k: p for k, v in catalogue("zh").items() if (p := term_problems(v))}
    assert not bad, f"zh values with another term than the one chosen: {bad}"


def test_english_attributes_claims_to_their_source():
    bad = {k: m.group(0) for k, v in catalogue("en").items() for p in TERMS_EN.values() if (m := re.search(p, v))}
    assert not bad, bad


def test_english_says_one_word_per_concept():
    bad = {k: m.group(0) for k, v in catalogue("en").items() for p in TERMS_EN_ONE_WORD.values()
           if (m := re.search(p, v))}  # fmt: skip
    assert not bad, bad


@pytest.mark.parametrize(
    "bad",
    ["快不到 2 倍——差不多", "节省的倍数恰好是 4", "缩小的倍数", "快了近 {x} 倍", "循环网络把全部历史", "Adam 的两个动量",
     "最低的种子，%", "实测传播距离", "每一个都要等上一个状态算完", "多查询回忆往往", "会碰到四个限制", "教材的预期",
     "把得分表完整写出", "一张得分矩阵", "为每一对位置打分", "约 2·r·n 个分数", "教材章节中的模型", "运行旁实测",
     "配对重复之间为 2 倍", "多次交替重复测量，范围 2–3 倍", "自带文件", "耗时随 n^{b} 增长", "× 头大小",
     "固定的隐状态", "最大固定隐状态", "生成：固定状态还是缓存", "梯度能传多远", "梯度能往回传多远", "线性循环（扫描）",
     "它的记忆单元", "同样的交换", "再由内核把新的页清零", "内核每次调用都要把它清零", "K/V 头更少", "共用一个键值头",
     "注意力图", "词表输出头", "每步 3 µs", "在这台机器上亲自测量", "原始 Transformer", "成千上万条通道",
     "受运算量限制", "参考数据，在 cpu 上测得", "跳跃通路", "残差通路", "重复探针", "共 9 份工作"],
)  # fmt: skip
def test_the_term_check_catches(bad):
    assert term_problems(bad)


@pytest.mark.parametrize(
    "good",
    ["不到逐步循环的 2 倍", "是逐步循环的几十倍", "降到多头注意力的 1/N", "循环神经网络", "隐状态向量", "细胞状态",
     "状态空间模型", "每通道状态数 N", "Adam 的一阶矩和二阶矩估计", "各种子中的最低值", "多查询联想回忆",
     "一张注意力分数矩阵", "约 2·r·n 个注意力分数", "四分位数", "教材中的模型", "本章指出", "运行期间实测",
     "配对重复测量：2.4–2.6 倍", "配对重复测量中", "随实验室附带的文件", "随 n 线性增长", "× 头维度", "固定大小的隐状态",
     "梯度能回传多远", "实测回传距离", "线性递推（扫描）", "细胞状态（c）", "这种权衡", "由操作系统内核把新的页清零",
     "融合内核内部只能看到 0", "一次内核启动", "KV 头更少", "注意力热力图", "这张热力图", "输出层", "每步 3 微秒",
     "亲手测一测", "标准 Transformer", "向量单元", "受计算量限制", "参考结果", "残差流", "跳跃连接", "复制探针",
     "共 9 项工作"],
)  # fmt: skip
def test_the_term_check_passes(good):
    assert not term_problems(good)


def test_the_glossary_writes_down_every_chosen_term():
    """docs/GLOSSARY.md is the term sheet: each form chosen above is written there, so the test and the sheet agree."""
    from pathlib import Path

    sheet = (Path(__file__).resolve().parent.parent / "docs" / "GLOSSARY.md").read_text(encoding="utf-8")
    missing = [form for good, _ in TERMS_ZH.values() for form in good.split(" / ") if form not in sheet]
    assert not missing, f"chosen in TERMS_ZH but not in docs/GLOSSARY.md: {missing}"


# ---- punctuation in Chinese sentences assembled by code --------------------------------------------------------
CJK = r"\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"  # ideographs and the full-width punctuation around them
ASCII_NEXT_TO_CJK = re.compile(rf"[{CJK}]\s*[,:;(]|[,:;]\s*[{CJK}]|[{CJK}]\)")
ASIDE = re.compile(r" \((?:[^()]*[–{CJK}][^()]*)\)".replace("{CJK}", CJK))  # ' (1.1–1.3)', ' (3 个种子…)'


HAN = r"\u4e00-\u9fff"
# Full-width brackets carry their own space: '（math） 在' and '**10 步** 就' show a gap a Chinese reader sees as a slip.
# Brackets inside brackets ('停在 13%（3 个种子：…）；随机猜测 12%）') are untangled into a sentence of their own; a
# quoted status word (“未运行（时间）”) is a name, not an aside.
SHAPE_RULES = {
    "space after a full-width bracket": re.compile(rf"）[ ]+[{HAN}]"),
    "space after closing bold": re.compile(rf"[{HAN}]\*\*[ ]+[{HAN}]"),
    "brackets inside brackets": re.compile(r"（[^（）]*（[^（）]*）[^（）]*）"),
}
SPACED_NAME = re.compile(rf"[{HAN}] +[{HAN}]")  # '注意力 的准确率', '2 个线程 上': a name dropped into a sentence


def shape_problems(text: str) -> list[str]:
    text = re.sub(r"“[^”]*”", "“”", re.sub(r"`[^`]*`", "", text))
    return [f"{m.group(0)!r} ({rule})" for rule, pattern in SHAPE_RULES.items() for m in pattern.finditer(text)]


def punctuation_problems(text: str) -> list[str]:
    """ASCII , : ; ( ) touching a Chinese character, or an ASCII-bracketed aside after a value, in a 中文 sentence;
    and the shapes above, plus a space between two Chinese characters where code put a name or label.
    Formulas keep ASCII (O(n), N(0, 1), 1 / (s + (1 − s)/p)): their brackets sit between Latin letters and digits."""
    text = re.sub(r"`[^`]*`", "", text)
    found = [m.group(0) for m in ASCII_NEXT_TO_CJK.finditer(text)]
    found += [m.group(0) for m in ASIDE.finditer(text)]
    found += shape_problems(text) + [m.group(0) for m in SPACED_NAME.finditer(text)]
    return found


def test_chinese_values_have_no_stray_space_or_nested_brackets():
    """Over every 中文 value (methods and intros too, which no takeaway renders). A formula written in words keeps
    its spaces (字节 ≈ a·nᵇ, 层数 × 头数), so the space between two Chinese characters is checked only where code
    fills a sentence (below)."""
    bad = {k: p for k, v in catalogue("zh").items() if (p := shape_problems(v))}
    assert not bad, bad


@pytest.mark.parametrize(
    "bad",
    ["加速比为 1.23× (1.10–1.30)，融合 LSTM", "d=36: 96%（3 个种子：20%–100%）, d=72", "增长, 而", "串行比例 0.61 (0.60–0.63)",
     "MHA 1.0 MiB, GQA 256 KiB。"[:-1] + "（x）, 其余", "在{task}上(距离 64)", "sdpa（math） 在 n = 16,384",
     "经过 **10 步** 就降到", "没有（停在 13%（3 个种子：12%–41%）；随机猜测 12%）", "LSTM + 注意力 的准确率",
     "在 cpu · AMD EPYC · 2 个线程 上"],
)  # fmt: skip
def test_the_punctuation_check_catches(bad):
    assert punctuation_problems(bad)


@pytest.mark.parametrize(
    "good",
    ["即表 1 的 O(n)", "x ~ N(0, 1) 的随机输入", "“加速比 = 1 / (s + (1 − s)/p)”拟合", "d=36：96%（3 个种子：20%–100%）",
     "n^0.50 ± 0.00", "运行 `python -m core run serial, x`", "sdpa（math），n = 16,384：没有运行", "经过 **10 步**就降到",
     "**本机测得**：n = 1,024 时", "**来源。** Vaswani 等人", "状态为“未运行（时间）”（CSV 中为 `skipped_time`）",
     "LSTM（融合内核） 2%、minGRU 18%"],
)  # fmt: skip
def test_the_punctuation_check_passes(good):
    assert not punctuation_problems(good)


@functools.cache
def _reference(name: str):
    ref, problems = load_reference(name)
    assert not problems, problems
    return ref[ref["device"] == ref["device"].iloc[0]] if len(ref) else ref


def rendered(tr) -> dict[str, str]:
    """Every sentence code assembles from the shipped references: takeaways, the verdicts' reasons and sentences,
    and the home page's findings and Table 1."""
    out = {}
    frames = {name: _reference(name) for name in EXPERIMENTS}
    for name, df in frames.items():
        if len(df):
            for i, line in enumerate(EXPERIMENTS[name].takeaways(df, tr)):
                out[f"{name} takeaway {i}"] = line
    for i, line in enumerate(scaling_findings.why(frames["scaling"], tr)):
        out[f"scaling why {i}"] = line
    c = serial_findings.comparison(frames["serial"])
    hw = serial_findings.measured_hardware(frames["serial"], tr)
    for i, line in enumerate(serial_findings.explanation(c, hw, tr) if c else []):
        out[f"serial why {i}"] = line
    for question, q in verdicts.QUESTIONS.items():
        v = q.verdict(frames[q.experiment])
        if v is not None:
            out[f"verdict {question}"] = verdicts.sentence(v, tr)
    for key, line in home.findings(frames, tr).items():
        out[f"home finding {key}"] = line
    for i, row in enumerate(home.table1(frames, tr).itertuples(index=False)):
        out[f"home table 1 row {i}"] = " | ".join(map(str, row))
    return out


def zh(key, **values):
    return t(key, "zh", **values)


def test_chinese_sentences_built_by_code_use_chinese_punctuation():
    said = rendered(zh)
    assert len(said) > 40, "the shipped references say something on every page"
    bad = {k: p for k, v in said.items() if (p := punctuation_problems(v))}
    assert not bad, f"ASCII punctuation in 中文 sentences assembled in code: {bad}"
    bad = {k: p for k, v in said.items() if (p := term_problems(v))}
    assert not bad, f"terms in 中文 sentences assembled in code: {bad}"
    bad = {k: m.group(0) for k, v in said.items() if (m := re.search(r"\d(?:\.\d+)?e[+-]?\d", v))}
    assert not bad, f"numbers in e-notation (the glossary: 1.4×10⁻¹⁵, 3,420): {bad}"
    bad = {k: m.group(0) for k, v in said.items() if (m := re.search(r"[-−]0\.0+(?!\d*[1-9])", v))}
    assert not bad, f"a negative zero (a flat slope reads 0.00): {bad}"
    bad = {k: p for k, v in said.items() if (p := uneven_ranges(v))}
    assert not bad, f"a range whose two ends are written to different decimals: {bad}"


def uneven_ranges(text: str) -> list[str]:
    """'1.4–1.43' beside '1.40–1.43' in the verdict: below 10, both ends of a range get the same decimals."""
    found = []
    for m in re.finditer(r"(?<![\d.,])(\d+(?:\.(\d+))?)–(\d+(?:\.(\d+))?)(?![\d.,])", text):
        if float(m.group(1)) < 10 and float(m.group(3)) < 10 and len(m.group(2) or "") != len(m.group(4) or ""):
            found.append(m.group(0))
    return found


@pytest.mark.parametrize(("text", "uneven"), [("（1.4–1.43）", True), ("（1.40–1.43）", False), ("4.5–11", False),
                                             ("2–3 层", False), ("0.0022–0.0087", False)])  # fmt: skip
def test_the_range_check(text, uneven):
    assert bool(uneven_ranges(text)) == uneven


def test_no_catalogue_value_writes_a_number_in_e_notation():
    """The glossary's number rule holds in methods and intros too (a learning rate is 0.003 or 10⁻⁴, not 3e-3)."""
    bad = {(lang, k): m.group(0) for lang in ("en", "zh") for k, v in catalogue(lang).items()
           if (m := re.search(r"\d(?:\.\d+)?e[-+]?\d", re.sub(r"`[^`]*`", "", v)))}  # fmt: skip
    assert not bad, bad


def test_the_scan_sees_a_comma_put_into_a_chinese_takeaway(monkeypatch):
    """The scan above reads what a learner reads: an ASCII comma in one catalogue sentence shows up in it."""
    values = dict(catalogue("zh"))
    values["serial.take.fastest"] = values["serial.take.fastest"].replace("，", ", ", 1)
    monkeypatch.setattr("core.terms.i18n.catalogue", lambda lang: values if lang == "zh" else catalogue(lang))
    said = rendered(zh)
    assert any(punctuation_problems(v) for k, v in said.items() if k.startswith("serial takeaway"))


# ---- facts that two pages state must agree; charts name what they draw ------------------------------------------
def test_the_reach_table_and_table_1_give_attention_over_a_recurrence_the_same_path_length():
    from core.experiments.gradient_reach import path_length

    table1 = {row[0]: row[3] for row in scoreboard.TABLE1}  # (row, complexity, sequential, path)
    assert path_length("lstm_attention") == table1["recurrent_attention"] == "O(1)"
    assert path_length("lstm") == table1["recurrent"] == "O(n)" and path_length("attention") == "O(1)"


def test_the_more_cores_chart_names_its_models_and_the_checkpoint_chart_reads_mib():
    from core.charts import checkpoint as checkpoint_charts
    from core.charts import scaling as scaling_charts

    en = functools.partial(t, lang="en")
    spec = scaling_charts.speedup_chart(_reference("scaling"), en).to_dict()
    domains = [la["encoding"]["color"]["scale"]["domain"] for la in spec["layer"] if "color" in la["encoding"]]
    assert domains and all("LSTM (fused)" in d and "lstm" not in d and "lstm_attention" not in d for d in domains)
    memory = checkpoint_charts.memory_chart(_reference("checkpoint"), en).to_dict()
    assert any("MiB" in str(la["encoding"]["y"].get("title", "")) for la in memory["layer"])
