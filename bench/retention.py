"""Retention: does the request still hold the fact a question needs, once the budget has trimmed the history?

Usage: ``make bench`` (or ``.venv/bin/python bench/retention.py [--cases N] [--quick] [--doc PATH] [--json PATH]``).

The generator is built the way LongMemEval is: each case is a long chat
(about 60,000 tokens) of filler sessions on everyday topics, one user turn in
it states a personal fact (the evidence), placed uniformly in the first 90% of
the turns, and the final user turn asks a question that needs it. Every fact
has two questions written as a person would ask them: a *lexical* one that
reuses the fact's words, and a *paraphrased* one that asks for the same thing
in other words. Filler turns mention the same people and things in other
contexts (distractors). Three agent tool rounds per case (a request, a tool
call, a result of 4,500 to 9,000 tokens of topic text, a short answer) sit at
uniform places: they never hold the answer, but a result can take most of a
small window. Seeded: the same ``--seed`` gives the same cases.

A case is retained when the request sent to the model holds the fact's value
(the answer) anywhere in its text. Rows:

- LangChain ``trim_messages`` (``strategy="last"``, ``start_on="human"``, the
  system prompt kept), counted with the exact cl100k rule of
  ``bench/langchain_side.py`` (memoised per message: the same counts, faster);
- ctxcore ``history`` + ``token_budget`` (what a thread does without recall);
- ctxcore with ``recall`` after the budget (defaults: ``budget_share: 0.15``,
  no ``max_units`` cap; BM25 only, no embeddings);
- the same with ``offload`` before the budget (defaults) and recall's
  ``evicted_note``: a big tool result becomes a preview plus a handle, so it
  no longer takes the window, and the left-out span is named by a handle;
- both recall rows again with hybrid ranking by a real embedding model,
  all-MiniLM-L6-v2 on the CPU, offline (bench/minilm_embedder.py), named in
  the YAML as a user would (``embedder: minilm_embedder:embed``). That
  function memoises text -> vector for the process: the same texts recur
  across budgets and rows, and each is embedded once. Where the model's
  packages are missing, these rows are skipped with one line saying why.

Columns: 4k / 8k / 32k input budgets, lexical and paraphrased questions
apart, and the mean tokens of a request. The next-turn table times one build
after appending a turn to a history of 2,000 and 20,000 messages, with and
without recall, with recall and the model (no memo there: each new message is
embedded in the timed build, as in a user's; the question, the newest user
message, is read back from the index), and LangChain's
``trim_messages`` over the same history with its counts memoised per message,
in one process (CPU time, the median of several next turns): compare the
ratios, not the numbers across runs.

On a terminal a progress bar runs on stderr (nothing in a pipe or with ``--quiet``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import minilm_embedder  # noqa: E402
from bench_progress import Advance, progress_bar  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402

SECTION = "retention"
SYSTEM_PROMPT = "You are a helpful personal assistant. Answer from what the user told you."
BUDGETS = (4_000, 8_000, 32_000)
TARGET_TOKENS = 60_000
NEXT_TURN_SIZES = (2_000, 20_000)

# (fact template, value pool, lexical question, paraphrased question). The paraphrase asks for the same
# thing as a person would when they do not remember how they said it; it is written once, here, and
# never adjusted to what a ranker finds.
FACTS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("My sister Clara moved to {v} last spring.", ("Lisbon", "Tallinn", "Osaka", "Valparaiso", "Leipzig"),
     "Where did my sister Clara move to?", "In which city does Clara live these days?"),
    ("My dentist is Dr. {v}, her office is near the station.", ("Okafor", "Lindqvist", "Moreau", "Tanabe", "Brennan"),
     "What is the name of my dentist?", "Who looks after my teeth?"),
    ("I parked the car on level {v} of the garage.", ("B3", "P7", "C2", "D5", "E4"),
     "On which level of the garage did I park the car?", "Where did I leave my vehicle?"),
    ("The wifi password at the cabin is {v}.", ("pinecone42", "otterlake7", "birch-harbor", "moss9fern", "quietbay11"),
     "What is the wifi password at the cabin?", "How do I get online when we stay up at the lake house?"),
    ("My daughter's piano teacher is called {v}.", ("Mrs. Halvorsen", "Mr. Achebe", "Ms. Kowalczyk", "Mr. Ferreira", "Ms. Nakashima"),
     "Who is my daughter's piano teacher?", "Who gives my kid her music lessons?"),
    ("I am allergic to {v}, so keep it out of recipes.", ("sesame", "walnuts", "shellfish", "buckwheat", "kiwi"),
     "What am I allergic to?", "Which ingredient makes me sick?"),
    ("Our anniversary is on {v}.", ("March 14", "June 2", "September 23", "November 8", "January 30"),
     "When is our anniversary?", "What date did my partner and I get married?"),
    ("My gym locker combination is {v}.", ("27-04-19", "11-38-02", "05-22-31", "16-09-44", "33-12-07"),
     "What is my gym locker combination?", "What are the numbers to open my locker at the fitness club?"),
    ("The plumber who fixed our boiler was {v}.", ("Dario Rossi", "Femi Adeyemi", "Jonas Berg", "Luis Ortega", "Pavel Novak"),
     "Who was the plumber who fixed our boiler?", "Whom should I call again about the heating?"),
    ("My flight to the conference is {v}.", ("LH 1734", "KL 1602", "AF 1219", "BA 0987", "SK 1455"),
     "What is my flight to the conference?", "Which plane am I taking for the work trip?"),
    ("I keep the spare house key under the {v}.", ("blue flowerpot", "third stair", "garden gnome", "doormat", "bird bath"),
     "Where do I keep the spare house key?", "If I get locked out, where can I find a way back in?"),
    ("My son's best friend is named {v}.", ("Ravi", "Mateo", "Soren", "Kwame", "Elio"),
     "What is my son's best friend named?", "Who is the boy my kid spends all his time with?"),
    ("The book club is reading {v} this month.", ("The Overstory", "Piranesi", "Stoner", "Middlemarch", "Kindred"),
     "What is the book club reading this month?", "Which novel do I need to finish before our next literary evening?"),
    ("My blood type is {v}.", ("O negative", "AB positive", "B negative", "A positive", "AB negative"),
     "What is my blood type?", "What should I tell the hospital if they ask what kind of blood I have?"),
    ("I adopted a cat and named her {v}.", ("Mochi", "Pixel", "Saffron", "Noodle", "Juniper"),
     "What did I name the cat I adopted?", "What is my new pet called?"),
    ("My manager's name is {v}.", ("Ingrid Solberg", "Tomasz Wojcik", "Aisha Karim", "Greta Voss", "Hiro Sato"),
     "What is my manager's name?", "Who is my boss at work?"),
    ("The recycling is collected every {v}.", ("Tuesday", "Thursday", "second Monday", "Friday morning", "other Wednesday"),
     "When is the recycling collected?", "Which day should the bins go out to the curb?"),
    ("My grandmother was born in {v}.", ("Smyrna", "Krakow", "Bergen", "Tartu", "Trieste"),
     "Where was my grandmother born?", "What town does my family on my mother's side come from originally?"),
    ("I ran my first half marathon in {v}.", ("1:52:10", "2:04:33", "1:47:58", "2:11:05", "1:58:41"),
     "What was my time in my first half marathon?", "How fast did I finish that 21k race?"),
    ("Our landlord is {v} and he prefers texts.", ("Mr. Delacroix", "Mr. Haddad", "Mr. Janssen", "Mr. Oyelaran", "Mr. Petrov"),
     "Who is our landlord?", "Who owns the flat we rent?"),
)

TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cooking", ("pasta", "risotto", "garlic", "oven", "sauce", "basil", "simmer", "recipe", "dinner", "spices")),
    ("travel", ("itinerary", "train", "hotel", "museum", "booking", "luggage", "passport", "beach", "ferry", "visa")),
    ("coding", ("function", "bug", "python", "tests", "deploy", "database", "refactor", "logs", "commit", "api")),
    ("gardening", ("tomatoes", "compost", "seedlings", "soil", "pruning", "roses", "watering", "mulch", "shed", "beds")),
    ("fitness", ("workout", "stretching", "squats", "cardio", "protein", "rest", "running", "knees", "plan", "weights")),
    ("finance", ("budget", "savings", "rent", "taxes", "receipts", "pension", "loan", "invoice", "bank", "spending")),
    ("home", ("paint", "shelves", "leak", "furniture", "kitchen", "curtains", "drill", "hallway", "tiles", "lamp")),
    ("reading", ("novel", "chapter", "author", "library", "poetry", "essay", "plot", "characters", "ending", "series")),
)
PEOPLE = ("my sister", "my dentist", "my daughter", "my son", "my manager", "our landlord", "the plumber", "my grandmother",
          "my partner", "the cat", "the book club", "the gym", "the garage", "the cabin")
USER_TEMPLATES = (
    "Can you help me with {a} and {b}? {p} mentioned something about {c} yesterday.",
    "I want to get better at {a}. Any tips on {b} and {c}?",
    "Quick question about {a}: should I worry about {b} before {c}?",
    "{P} asked me about {a} and I did not know what to say about {b}.",
    "Let's plan the {a} for the weekend, with {b} and maybe {c}.",
)
ASSISTANT_SENTENCES = (
    "A good approach to {a} is to start small and keep notes on {b}.",
    "Many people find that {b} matters more than {a} at first.",
    "If {c} is the concern, set aside a little time each week for it.",
    "You could also ask {p} whether {a} fits the schedule.",
    "Try comparing two options for {b} and keep the one that feels easier.",
    "The usual mistake with {c} is doing too much at once.",
)


TOOL_ROUNDS = 3
TOOL_TOKENS = (4_500, 9_000)
TOOLS = ("read_notes", "search_documents", "fetch_page", "read_file")


@dataclass(frozen=True)
class Case:
    """One history (OpenAI dicts, ending with the question), the answer, and the question kind."""

    messages: list[dict[str, Any]]
    answer: str
    kind: str  # "lexical" | "paraphrased"
    evidence_at: int


def _filler_turn(rng: random.Random) -> list[dict[str, str]]:
    _, words = rng.choice(TOPICS)
    a, b, c = rng.sample(words, 3)
    p = rng.choice(PEOPLE)
    user = rng.choice(USER_TEMPLATES).format(a=a, b=b, c=c, p=p, P=p[0].upper() + p[1:])
    sentences = [rng.choice(ASSISTANT_SENTENCES).format(a=a, b=b, c=c, p=p) for _ in range(rng.randint(4, 8))]
    return [{"role": "user", "content": user}, {"role": "assistant", "content": " ".join(sentences)}]


def _tool_round(rng: random.Random, call_id: str, tokens: int) -> list[dict[str, Any]]:
    """An agent tool round: a request, a call, a result of about ``tokens`` tokens of topic text, and a short answer."""
    _, words = rng.choice(TOPICS)
    a, b, c = rng.sample(words, 3)
    p = rng.choice(PEOPLE)
    name = rng.choice(TOOLS)
    lines, size = [], 0
    while size < 4 * tokens:  # about four characters per token of this English text
        line = rng.choice(ASSISTANT_SENTENCES).format(a=rng.choice(words), b=rng.choice(words), c=rng.choice(words), p=p)
        lines.append(line)
        size += len(line) + 1
    return [
        {"role": "user", "content": f"Please look up what my notes say about {a} and {b}."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({"query": f"{a} {b}"})}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "\n".join(lines)},
        {"role": "assistant", "content": f"Your notes mostly cover {a}, {b} and {c}; {rng.choice(ASSISTANT_SENTENCES).format(a=a, b=b, c=c, p=p)}"},
    ]


def make_case(rng: random.Random, kind: str, target_tokens: int = TARGET_TOKENS, tokens_per_turn: int = 95) -> Case:
    """A case of about ``target_tokens`` tokens: filler turns and tool rounds, the evidence turn uniform in the first 90%.

    ``TOOL_ROUNDS`` agent tool rounds (each result ``TOOL_TOKENS`` tokens) sit
    at uniform places among the filler turns; they never hold the answer.
    """
    sizes = [rng.randint(*TOOL_TOKENS) for _ in range(TOOL_ROUNDS)] if target_tokens >= 4 * TOOL_TOKENS[1] else []
    turns = max(4, (target_tokens - sum(sizes)) // tokens_per_turn)
    template, pool, lexical, paraphrased = rng.choice(FACTS)
    value = rng.choice(pool)
    at = rng.randrange(0, max(1, int(turns * 0.9)))
    rounds = dict(zip(rng.sample([t for t in range(turns) if t != at], len(sizes)), sizes, strict=True))
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        if t == at:
            messages.append({"role": "user", "content": template.format(v=value) + " Just so you know."})
            messages.append({"role": "assistant", "content": "Thanks, I will keep that in mind."})
        elif t in rounds:
            messages.extend(_tool_round(rng, f"call_{t}", rounds[t]))
        else:
            messages.extend(_filler_turn(rng))
    messages.append({"role": "user", "content": lexical if kind == "lexical" else paraphrased})
    return Case(messages, value, kind, next(i for i, m in enumerate(messages) if value in (m["content"] or "")))


def make_cases(n: int, seed: int, target_tokens: int = TARGET_TOKENS) -> list[Case]:
    """``n`` cases, half lexical and half paraphrased questions, from ``seed``."""
    rng = random.Random(seed)
    return [make_case(rng, "lexical" if i % 2 == 0 else "paraphrased", target_tokens) for i in range(n)]


# ---------------------------------------------------------------------------- systems
def ctxcore_pipeline(budget: int, recall: bool, encoding: str = "cl100k_base", offload: bool = False,
                     embedder: str | None = None) -> Any:
    """The ctxcore pipeline measured: a system prompt, the history, token_budget (recall after it, offload before it).

    ``embedder`` is recall's ``embedder:`` option, an import path as a user writes it in YAML.
    """
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    from ctxcore import Pipeline
    from ctxcore.testing import fresh_host

    host = fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )
    # with offload, recall also names what it leaves out by a span handle: the whole of "offload instead of delete"
    options = [*(["evicted_note: true"] if offload else []), *([f"embedder: {json.dumps(embedder)}"] if embedder else [])]
    after = ["{" + ", ".join(["type: recall", *options]) + "}"] if recall else []
    filters = "[" + ", ".join([*(["offload"] if offload else []), "token_budget", *after]) + "]"
    return Pipeline.from_string(host=host, file="<bench/retention.py>", text=f"""
version: 1
model: {{context_window: {budget}, reserve_output_tokens: 0}}
counter: {{type: tiktoken, encoding: {encoding}}}
providers:
  - {{type: static_prompt, text: {json.dumps(SYSTEM_PROMPT)}}}
  - {{type: history, id: chat}}
filters: {filters}
""")


def ctxcore_system(budget: int, recall: bool, offload: bool = False, embedder: str | None = None,
                   ) -> Callable[[Case], tuple[str, int]]:
    """Build a case with ctxcore; return the request text and its tokens."""
    pipeline = ctxcore_pipeline(budget, recall, offload=offload, embedder=embedder)

    def run(case: Case) -> tuple[str, int]:
        built = pipeline.build({"messages": case.messages})
        return "\n".join(m.text for m in built.messages), built.report.total_tokens

    return run


def encoding() -> Any:
    """The cl100k tiktoken encoding, loaded offline the way ctxcore's tiktoken counter loads it."""
    return ctxcore_pipeline(1_000, False).builder().counter.counter._encoding


def langchain_system(budget: int) -> Callable[[Case], tuple[str, int]]:
    """Trim a case with LangChain's trim_messages (last, start on human, system kept)."""
    from langchain_core.messages import trim_messages
    from langchain_side import MemoizedCl100kCounter, to_langchain

    counter = MemoizedCl100kCounter(encoding())  # the exact cl100k rule, each message counted once

    def run(case: Case) -> tuple[str, int]:
        messages = to_langchain(case.messages, SYSTEM_PROMPT)
        kept = trim_messages(messages, max_tokens=budget, token_counter=counter, strategy="last",
                             start_on="human", include_system=True)
        return "\n".join(str(m.content) for m in kept), counter(kept)

    return run


#: recall's embedder in the hybrid rows (memoised: the same texts recur across budgets and rows)
EMBEDDER = "minilm_embedder:embed"
#: the next-turn timing's embedder: every new message embedded, as in a user's build
NEXT_TURN_EMBEDDER = "minilm_embedder:encode"
HYBRID = f"ctxcore + recall (hybrid, {minilm_embedder.MODEL})"
SYSTEMS: dict[str, Callable[[int], Callable[[Case], tuple[str, int]]]] = {
    "LangChain trim_messages (last)": langchain_system,
    "ctxcore history + token_budget": lambda b: ctxcore_system(b, recall=False),
    "ctxcore + recall (BM25)": lambda b: ctxcore_system(b, recall=True),
    "ctxcore + recall + offload": lambda b: ctxcore_system(b, recall=True, offload=True),
    HYBRID: lambda b: ctxcore_system(b, recall=True, embedder=EMBEDDER),
    f"{HYBRID} + offload": lambda b: ctxcore_system(b, recall=True, offload=True, embedder=EMBEDDER),
}
#: the rows that need the embedding model: skipped, with one line saying why, where its packages are missing
NEEDS_MODEL = frozenset({HYBRID, f"{HYBRID} + offload"})


def _no_progress(steps: int = 1) -> None:
    return None


def retention(cases: list[Case], budgets: tuple[int, ...], advance: Advance = _no_progress) -> dict[str, dict[str, Any]]:
    """Per system and budget: the share of lexical / paraphrased / all cases retained, and mean request tokens.

    ``advance()`` is called after each case of each system and budget. A row
    that needs the embedding model where it is missing is ``{"skipped": why}``,
    and says so on stderr.
    """
    out: dict[str, dict[str, Any]] = {}
    absent = minilm_embedder.missing()
    for name, make in SYSTEMS.items():
        if name in NEEDS_MODEL and absent:
            print(f"retention: row {name!r} skipped: {absent}", file=sys.stderr)
            out[name] = {"skipped": absent}
            advance(len(budgets) * len(cases))
            continue
        row: dict[str, Any] = {}
        for budget in budgets:
            run = make(budget)
            hits: dict[str, list[bool]] = {"lexical": [], "paraphrased": []}
            tokens = []
            for case in cases:
                text, used = run(case)
                hits[case.kind].append(case.answer in text)
                tokens.append(used)
                advance(1)
            every = hits["lexical"] + hits["paraphrased"]
            row[str(budget)] = {kind: sum(v) / len(v) if v else 0.0 for kind, v in hits.items()}
            row[str(budget)]["all"] = sum(every) / len(every)
            row[str(budget)]["tokens"] = statistics.mean(tokens)
        out[name] = row
    return out


# ------------------------------------------------------------------------- next turn
def _next_turn_history(size: int) -> tuple[random.Random, list[dict[str, Any]]]:
    rng = random.Random(size)
    history: list[dict[str, Any]] = []
    while len(history) < size:
        history.extend(_filler_turn(rng))
    history.append({"role": "user", "content": "What did we say about the garden shed?"})
    return rng, history


def _next_turn(rng: random.Random) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": f"And the {rng.choice(TOPICS)[1][0]}?"}]


def next_turn_seconds(size: int, recall: bool, budget: int = 8_000, turns: int = 7, embedder: str | None = None) -> float:
    """CPU seconds of a next-turn build (median of ``turns``) on a history of ``size`` messages.

    With ``embedder`` (recall's option) a build also embeds the new messages
    and the question, and the first build embeds the whole history.
    """
    rng, history = _next_turn_history(size)
    pipeline = ctxcore_pipeline(budget, recall, embedder=embedder)
    pipeline.build({"messages": history})  # the first build: everything indexed and counted once
    times = []
    for _ in range(turns):
        history.extend(_next_turn(rng))
        started = time.process_time()
        pipeline.build({"messages": history})
        times.append(time.process_time() - started)
    return statistics.median(times)


def langchain_next_turn_seconds(size: int, budget: int = 8_000, turns: int = 7) -> float:
    """The same next turn with LangChain's ``trim_messages`` and a per-message memo of the exact counts."""
    from langchain_core.messages import trim_messages
    from langchain_side import MemoizedCl100kCounter, to_langchain

    rng, history = _next_turn_history(size)
    counter = MemoizedCl100kCounter(encoding())
    messages = to_langchain(history, SYSTEM_PROMPT)
    trim_messages(messages, max_tokens=budget, token_counter=counter, strategy="last", start_on="human", include_system=True)
    times = []
    for _ in range(turns):
        messages.extend(to_langchain(_next_turn(rng)))  # converted once, when the turn arrives
        started = time.process_time()
        trim_messages(messages, max_tokens=budget, token_counter=counter, strategy="last", start_on="human",
                      include_system=True)
        times.append(time.process_time() - started)
    return statistics.median(times)


def next_turns(sizes: tuple[int, ...], advance: Advance = _no_progress) -> dict[str, dict[str, Any]]:
    """Next-turn build time with and without recall, their ratio, with recall and the embedding model, and
    LangChain's memoised trim, per history size (``"embedder"`` is ``None`` where the model is missing).

    ``advance()`` is called after each size.
    """
    out: dict[str, dict[str, Any]] = {}
    absent = minilm_embedder.missing()
    for size in sizes:
        without, with_recall = next_turn_seconds(size, False), next_turn_seconds(size, True)
        hybrid = None if absent else next_turn_seconds(size, True, embedder=NEXT_TURN_EMBEDDER)
        out[str(size)] = {"without": without, "with": with_recall, "ratio": with_recall / without if without else 0.0,
                          "embedder": hybrid, "langchain": langchain_next_turn_seconds(size)}
        advance(1)
    return out


# ----------------------------------------------------------------------------- output
def markdown(results: dict[str, Any]) -> str:
    """The tables for docs/recall.md."""
    budgets = results["budgets"]
    header = ["system"] + [f"{b // 1000}k {k}" for b in budgets for k in ("lexical", "paraphrased")] + \
        [f"tokens/request {b // 1000}k" for b in budgets]
    measured = {name: row for name, row in results["retention"].items() if "skipped" not in row}
    skipped = [f"Not measured here: {name} ({row['skipped']})." for name, row in results["retention"].items()
               if "skipped" in row]
    rows = []
    for name, row in measured.items():
        cells = [f"{row[str(b)][k]:.2f}" for b in budgets for k in ("lexical", "paraphrased")]
        rows.append([name, *cells, *(f"{row[str(b)]['tokens']:,.0f}" for b in budgets)])
    all_rows = [[name, *(f"{row[str(b)]['all']:.2f}" for b in budgets)] for name, row in measured.items()]
    turn_rows = [[f"{int(size):,}", f"{v['without'] * 1000:.2f}", f"{v['with'] * 1000:.2f}", f"{v['ratio']:.2f}x",
                  "skipped" if v.get("embedder") is None else f"{v['embedder'] * 1000:.2f}", f"{v['langchain'] * 1000:.2f}"]
                 for size, v in results["next_turn"].items()]
    return "\n\n".join([
        f"Measured by `{results['command']}`: {results['cases']} cases (seed {results['seed']}), "
        f"about {results['mean_tokens']:,.0f} tokens of history each.",
        "Answer retained, by question kind, and the mean tokens of a request:",
        markdown_table(header, rows),
        *skipped,
        "All questions:",
        markdown_table(["system", *(f"{b // 1000}k" for b in budgets)], all_rows),
        f"Next-turn build (CPU ms, median), 8k budget; the embedder is {minilm_embedder.MODEL} on the CPU "
        "(CPU time of all its threads), each new message embedded:",
        markdown_table(["history messages", "without recall", "with recall", "ratio", "with recall + embedder",
                        "LangChain trim_messages (memo)"], turn_rows),
    ])


def run(n_cases: int, seed: int, budgets: tuple[int, ...], sizes: tuple[int, ...], target_tokens: int, command: str,
        *, quiet: bool = False) -> dict[str, Any]:
    """Generate the cases, measure every system and the next turns; the results as a dict.

    A progress bar runs on stderr on a terminal unless ``quiet``.
    """
    cases = make_cases(n_cases, seed, target_tokens)
    enc = encoding()
    mean_tokens = statistics.mean(sum(len(enc.encode(m["content"] or "")) for m in c.messages) for c in cases[:20])
    steps = len(SYSTEMS) * len(budgets) * len(cases) + len(sizes)
    with progress_bar("retention", steps, quiet=quiet) as advance:
        kept, turns = retention(cases, budgets, advance), next_turns(sizes, advance)
    return {"command": command, "cases": n_cases, "seed": seed, "budgets": list(budgets), "mean_tokens": mean_tokens,
            "retention": kept, "next_turn": turns}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, and write them into the docs page and a JSON file when asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few small cases and small histories (smoke test)")
    parser.add_argument("--doc", type=Path, default=None, help="write the tables into this page's bench:retention section")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr (there is none in a pipe anyway)")
    args = parser.parse_args(argv)
    command = "python bench/retention.py" + "".join(
        f" {flag}" for flag in (f"--cases {args.cases}" if args.cases != 300 else "", "--quick" if args.quick else "") if flag)
    if args.quick:
        results = run(min(args.cases, 8), args.seed, (1_000, 4_000), (200,), 6_000, command, quiet=args.quiet)
    else:
        results = run(args.cases, args.seed, BUDGETS, NEXT_TURN_SIZES, TARGET_TOKENS, command, quiet=args.quiet)
    body = markdown(results)
    print(body)
    doc = args.doc
    if doc is None and not args.quick and __import__("os").environ.get("CTXCORE_BENCH_VIA_MAKE"):
        doc = ROOT / "docs" / "recall.md"
    if doc is not None:
        write_section(doc, SECTION, body)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
