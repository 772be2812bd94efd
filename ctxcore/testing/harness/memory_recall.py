"""A small labelled retrieval set and ``recall_at_k`` for any memory store.

40 memories one assistant might keep about a user, and 20 questions asked in
later conversations, each labelled with the memories that answer it. The
questions are phrased the way people ask (other word forms, filler words,
only some words shared with the memory), so the set separates plain keyword
overlap from real ranking. The memory distribution's tests assert floors on
it and ``bench/memory_recall.py`` prints the table in docs/memory.md.

Recall@k of one question is the share of its expected memories among the top
k results; the set's recall@k is the mean over the questions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RECALL_MEMORIES", "RECALL_QUERIES", "RecallResult", "recall_at_k"]

#: label -> memory text.
RECALL_MEMORIES: dict[str, str] = {
    "m01": "The user's name is Priya Raman and she works as a backend engineer at Northwind Logistics.",
    "m02": "Priya prefers tabs over spaces and uses Neovim as her main editor.",
    "m03": "Priya is allergic to peanuts; never suggest recipes containing peanuts.",
    "m04": "Her daughter Maya was born on 14 June 2019.",
    "m05": "Priya lives in Rotterdam and commutes to the office by bicycle.",
    "m06": "The production Kubernetes cluster runs in eu-west-1 and is managed with Terraform.",
    "m07": "Deploys to production are only allowed on Tuesdays and Thursdays before 15:00.",
    "m08": "The staging database is PostgreSQL 15, reachable at db.staging.northwind.internal.",
    "m09": "Priya's team uses GitLab CI; pipelines cache Python wheels in a shared bucket.",
    "m10": "The on-call rotation changes every Monday at 09:00 Amsterdam time.",
    "m11": "Priya dislikes long meetings and asks for agendas to be sent a day in advance.",
    "m12": "She is learning Japanese and practises with flashcards every evening.",
    "m13": "Her favourite food is Ethiopian injera with lentil stew.",
    "m14": "Priya runs half marathons; her best time is 1 hour 52 minutes.",
    "m15": "The billing service is written in Go and owned by the payments team.",
    "m16": "Priya's manager is Tomas Eriksen, who prefers written status updates on Fridays.",
    "m17": "The company VPN uses WireGuard; config files live in the infra repository.",
    "m18": "Priya wants code review comments phrased as questions rather than commands.",
    "m19": "Her laptop is a ThinkPad X1 Carbon running Fedora Linux.",
    "m20": "Priya drinks her coffee black and avoids caffeine after 3pm.",
    "m21": "The customer-facing API has a rate limit of 600 requests per minute per key.",
    "m22": "Incident postmortems are written in the wiki within 48 hours and are blameless.",
    "m23": "Priya plans a holiday to Kyoto in April next year.",
    "m24": "Her cat is called Biscuit and needs medication twice a day.",
    "m25": "The search service indexes shipments with Elasticsearch 8.",
    "m26": "Priya is vegetarian except for occasionally eating fish.",
    "m27": "Secrets are stored in HashiCorp Vault; never paste tokens in chat.",
    "m28": "The mobile app release train ships every second Wednesday.",
    "m29": "Priya prefers dark mode and large fonts because of eye strain.",
    "m30": "Her sister Anika lives in Toronto and works as a nurse.",
    "m31": "Log retention in production is 30 days in Loki.",
    "m32": "Priya mentors two junior engineers, Sam and Lena, every Wednesday afternoon.",
    "m33": "The warehouse scanners send events over MQTT to the ingest service.",
    "m34": "Priya's preferred programming language is Rust, though work is mostly Python.",
    "m35": "She takes Dutch lessons on Saturday mornings.",
    "m36": "Database migrations must be backwards compatible for one release.",
    "m37": "The design system lives in a Storybook hosted on the internal portal.",
    "m38": "Priya's birthday is 2 November and she dislikes surprise parties.",
    "m39": "The ingest service is written in Python with FastAPI and uses Celery workers.",
    "m40": "Feature flags are managed with Unleash; stale flags are removed each quarter.",
}

#: (question, labels of the memories that answer it).
RECALL_QUERIES: list[tuple[str, tuple[str, ...]]] = [
    ("What editor does she use?", ("m02",)),
    ("Can I suggest a peanut satay recipe for dinner?", ("m03", "m26")),
    ("When is her daughter's birthday?", ("m04",)),
    ("Which days may we deploy to production?", ("m07",)),
    ("How do I connect to the staging database?", ("m08",)),
    ("Who is on call and when does the rotation change?", ("m10",)),
    ("How should I phrase review comments for Priya?", ("m18",)),
    ("What is the API rate limit per minute?", ("m21",)),
    ("Where do postmortems go after an incident?", ("m22",)),
    ("What are her travel plans for the holidays?", ("m23",)),
    ("What is the name of her pet cat?", ("m24",)),
    ("Where should secrets and tokens be kept?", ("m27",)),
    ("How long are production logs retained?", ("m31",)),
    ("Which junior engineers does she mentor?", ("m32",)),
    ("What language is the ingest service written in?", ("m39", "m33")),
    ("How are feature flags managed?", ("m40",)),
    ("Which cluster region is production running in?", ("m06",)),
    ("What should I know before scheduling a meeting with her?", ("m11",)),
    ("Does she drink coffee in the afternoon?", ("m20",)),
    ("Which Linux distribution runs on her laptop?", ("m19",)),
]


@dataclass
class RecallResult:
    """Recall of one store on the set: the mean and each question's share found."""

    k: int
    per_query: list[float] = field(default_factory=list)

    @property
    def recall(self) -> float:
        """Mean recall@k over the questions."""
        return sum(self.per_query) / len(self.per_query) if self.per_query else 0.0


def recall_at_k(store: Any, k: int = 5, namespace: str = "recall-set") -> RecallResult:
    """Record :data:`RECALL_MEMORIES` into ``store`` and measure recall@k of :data:`RECALL_QUERIES`.

    The store should be empty in ``namespace``; the ids the store assigns are
    mapped back to the labels, so stores without caller-chosen ids work too.
    """
    ids: dict[str, str] = {}
    for label, text in RECALL_MEMORIES.items():
        items = store.record(text, namespace=namespace)
        if len(items) != 1:
            raise ValueError(f"recall set: recording {label} gave {len(items)} items; record without inference")
        ids[items[0].id] = label
    result = RecallResult(k)
    for question, expected in RECALL_QUERIES:
        found = {ids.get(item.id) for item in store.retrieve(question, limit=k, namespace=namespace)}
        result.per_query.append(sum(1 for label in expected if label in found) / len(expected))
    return result
