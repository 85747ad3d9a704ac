"""Page 5 — the answers: recurrences whose gates read only the input train as scans, and decode with a fixed state;
Table 1's rows measured side by side (training time, the memory kept while generating, gradient reach)."""

from core.charts import answers as charts
from core.charts import recall_frontier as recall_charts
from core.experiments import answers_decode, answers_reach, answers_speed, recall_frontier
from core.findings import answers as findings
from core.findings import answers_decode as decode_findings
from core.findings import answers_reach as reach_findings
from core.findings import recall_frontier as recall_findings
from ui import common as ui
from ui import instant as views  # the instant views: in ui, so their fragment keeps no page table

PAGE = "answers"
tr = ui.page_ui(PAGE)


ui.register(
    ui.Section(  # training: the loop, the scan, and the chapter's models
        PAGE,
        answers_speed.EXPERIMENT,
        ("mixers", "forms", "seq_lens", "long_lens", "d_model", "batch_size", "window", "chunk", "device", "seed"),
        text="answers.speed",
        question=PAGE,
        gpu_verdict=True,
        why=lambda v: v.lines[1:2],  # the headline's reason
        takeaways=findings.speed_takeaways,
        during=ui.both(charts.speedup_chart),
        instant=views.levels_view,
        charts=(
            (ui.both(charts.speedup_chart),),
            (ui.both(charts.time_chart), (ui.both(charts.steps_chart), ui.both(charts.memory_chart))),
            # the recurrence alone beside the whole step (this run's rows)
            (lambda b, p, tr: charts.amdahl_chart(p, tr) if len(findings.amdahl(p)) else None,),
        ),
    ),
    ui.Section(  # generating: a fixed state against a growing cache
        f"{PAGE}:decode",
        answers_decode.EXPERIMENT,
        ("mixers", "context_lens", "d_model", "gen_tokens", "window", "device"),
        text="answers.decode",
        takeaways=decode_findings.decode_takeaways,
        charts=((ui.both(charts.decode_memory_chart),), (ui.both(charts.decode_time_chart),)),
    ),
    ui.Section(  # gradient reach: Table 1's maximum path length for every row
        f"{PAGE}:reach",
        answers_reach.EXPERIMENT,
        ("models", "seq_len", "d_model", "seed"),
        text="answers.reach",
        takeaways=reach_findings.reach_takeaways,
        charts=((lambda b, p, tr: charts.reach_chart(p, tr),),),
        method=PAGE,
    ),
    ui.Section(  # what the fixed state costs: recall against the size of the state
        f"{PAGE}:recall",
        recall_frontier.EXPERIMENT,
        ("tasks", "mixers", "d_models", "n_pairs", "steps", "device", "seed"),
        text="recall",
        question="recall",
        why=lambda v: [line for line in [recall_findings.fall_line(v.primary, tr)] if line],
        takeaways=recall_findings.takeaways,
        during=ui.both(recall_charts.frontier_chart),
        charts=(
            (ui.both(recall_charts.pairs_chart),),  # the question's fall, 4 to 16 pairs at one width
            (ui.both(recall_charts.frontier_chart),),
            (lambda b, p, tr: recall_charts.copy_chart(b, tr) if len(recall_findings.copying(b)) else None,),
        ),
        legend="recall.chart.legend",
        method="recall",
        measured=recall_findings.final,
    ),
)
ui.sections_ui(tr, PAGE, tabs=True)
