"""Secret redaction: one set of rules for log events, reports and plugins.

Two rules, applied together:

* **by key name** — a mapping entry whose key ends in ``key``, ``token``,
  ``secret``, ``password``/``passwd`` or ``credential(s)``, or is
  ``authorization``/``cookie`` (case-insensitive, ``-``/``_`` ignored: ``api_key``,
  ``X-Api-Key``, ``GITHUB_TOKEN``, ``Authorization``), has its whole value
  replaced, whatever the value is;
* **by value pattern** — anything in a string that looks like a credential
  (``sk-…`` API keys, ``Bearer …`` headers, Google ``AIza…`` keys, GitHub
  ``ghp_…`` tokens, Slack ``xox…-`` tokens, AWS ``AKIA…`` key ids, AWS secret
  access keys after an ``aws_secret_access_key``-like name, URL query
  parameters named like secrets such as ``?api_key=…``) is replaced in place,
  wherever it appears (a log message, a tool result, an error text). A pattern
  with a named group ``secret`` replaces only that group, so the name stays
  readable: ``aws_secret_access_key = [REDACTED]``, ``?api_key=[REDACTED]``.

Counts such as ``total_tokens`` or ``max_tokens`` end in ``tokens`` and are
kept: only names ending in the singular are secrets.

The rules are data (:class:`Redactor`), so a deployment can add its own key
names and patterns; the module functions use the default rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_KEY_NAMES",
    "SECRET_VALUE_PATTERNS",
    "Redactor",
    "DEFAULT_REDACTOR",
    "is_secret_key",
    "redact_text",
    "redact",
    "redact_preview",
]

REDACTED = "[REDACTED]"

#: Key-name rule: the normalised name (lower case, ``-`` and ``_`` removed) ends
#: with one of these suffixes, or equals one of the exact names.
SECRET_KEY_NAMES: tuple[str, ...] = ("key", "token", "secret", "password", "passwd", "credential", "credentials")
SECRET_KEY_EXACT: tuple[str, ...] = ("authorization", "cookie", "setcookie")

# A secret-like name in free text or a serialized body, matched by its last word only (the
# prefix of ``DB_PASSWORD``, ``client_secret`` or ``aws_secret_access_key`` need not be read,
# only the value is replaced); singular ``token`` only, so ``max_tokens=400`` stays readable.
_SECRET_NAME = r"(?:pass(?:word|wd|phrase)|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?)"
# where an unquoted secret name may start: after a non-letter or an escaped line break (\\npassword=),
# or at a camelCase boundary (accessToken)
_NAME_START = r"(?:(?<![A-Za-z])|(?<=\\[nrt])|(?-i:(?<=[a-z])(?=[A-Z])))"
# quotes around a name or value, JSON-escaped any number of times (``"``, ``\"``, ``\\\"``)
_Q = r"(?:\\*[\"'])?"

# a word start: no letter, digit or underscore before, or an escaped line break or tab before
# (``\nsk-...`` in a JSON body or a repr has "n" before the key, yet the key starts there)
_B = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))"

#: Value rule: substrings that are credentials whatever key holds them.
SECRET_VALUE_PATTERNS: tuple[str, ...] = (
    # credentials recognisable by their own shape, at a word start (one group: the start is checked once)
    _B + "(?:" + "|".join((
        r"sk-[A-Za-z0-9_\-]{8,}",  # OpenAI / Anthropic style secret keys (sk-..., sk-proj-..., sk-ant-...)
        r"[rs]k_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe secret and restricted keys
        r"Bearer\s+[A-Za-z0-9._~+/=\-]{8,}",  # HTTP bearer credentials
        r"Basic\s+[A-Za-z0-9+/]{8,}={0,2}",  # HTTP basic credentials (base64 of user:password)
        r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",  # JSON web tokens
        r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
        r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
        r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained tokens
        r"hf_[A-Za-z0-9]{20,}",  # Hugging Face tokens
        r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
        r"(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids (long-term and temporary)
    )) + ")",
    # PEM private keys, whole block (or to the end of the text when a preview cut the END line off)
    r"-----BEGIN[A-Z ]* PRIVATE KEY-----(?:.*?-----END[A-Z ]* PRIVATE KEY-----|.*)",
    r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)",  # user:password in a URL (postgresql://u:p@host)
    # AWS secret access keys: 40 base64 characters after a secret-access-key name (env, INI, JSON, YAML)
    rf"(?i)\b(?:aws[_-]?)?secret[_-]?access[_-]?key{_Q}\s*[:=]\s*{_Q}(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+])",
    # URL query or fragment parameters named like secrets (?api_key=..., #access_token=..., &X-Amz-Signature=...)
    r"(?i)[?&#][a-z0-9_.\-]*(?:key|token|secret|password|passwd|signature|credential)=(?P<secret>[^&#\s\"'<>\\]+)",
    # an HTTP credential header written as text: its whole value, to the end of the line
    r"(?i)(?<![A-Za-z0-9])(?:proxy-)?(?:authorization|(?:set-)?cookie)[ \t]*:[ \t]*(?P<secret>(?!\[REDACTED\])[^\r\n\"'\\]+)",
    # an assignment to a secret-like name in text, env files, YAML or (escaped) JSON: "api_key": "...",
    # {'password': 'two words'} or ('Authorization', '...') (a quoted value up to its closing quote),
    # then password=... (unquoted, one word; the name starts a word or a camelCase part, so a
    # component spec such as tiktoken:o200k_base is not taken for a token)
    rf"(?i)(?:{_SECRET_NAME}|authorization|cookie){_Q}[ \t]*[:=,][ \t]*\\*[\"'](?P<secret>(?!\[REDACTED\])[^\"'\\\n]+)",
    rf"(?i){_NAME_START}{_SECRET_NAME}{_Q}[ \t]*[:=][ \t]*(?P<secret>(?!\[REDACTED\])[^\s\"'\\,;&<>(){{}}\[\]]{{3,}})",
)


@dataclass(frozen=True)
class Redactor:
    """A set of redaction rules; :data:`DEFAULT_REDACTOR` holds the defaults.

    Args:
        key_suffixes: normalised key-name suffixes that mark a secret.
        exact_keys: normalised key names that are secrets.
        value_patterns: regular expressions of secret substrings.
        replacement: what a secret becomes.
    """

    key_suffixes: tuple[str, ...] = SECRET_KEY_NAMES
    exact_keys: tuple[str, ...] = SECRET_KEY_EXACT
    value_patterns: tuple[str, ...] = SECRET_VALUE_PATTERNS
    replacement: str = REDACTED
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # each pattern's optional ``secret`` group gets a unique name in the one combined regex
        parts = [f"(?:{p.replace('(?P<secret>', f'(?P<secret{i}>')})" for i, p in enumerate(self.value_patterns)]
        object.__setattr__(self, "_compiled", re.compile("|".join(_lift_flags(parts)), re.DOTALL))

    def extended(self, *, key_names: Iterable[str] = (), value_patterns: Iterable[str] = ()) -> Redactor:
        """A redactor with extra key-name suffixes and value patterns added to these rules."""
        return Redactor(
            key_suffixes=self.key_suffixes + tuple(_normalise(k) for k in key_names),
            exact_keys=self.exact_keys,
            value_patterns=self.value_patterns + tuple(value_patterns),
            replacement=self.replacement,
        )

    def is_secret_key(self, name: object) -> bool:
        """Whether a mapping key names a secret (``api_key``, ``X-Api-Key``, ``Authorization``...)."""
        if not isinstance(name, str):
            return False
        norm = _normalise(name)
        return norm in self.exact_keys or norm.endswith(self.key_suffixes)

    def text(self, text: str) -> str:
        """``text`` with every secret-looking substring replaced (only its ``secret`` group, when it has one)."""
        return self._compiled.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        for name, value in match.groupdict().items():
            if value is not None and name.startswith("secret"):
                start, end = match.start(name) - match.start(), match.end(name) - match.start()
                whole = match.group(0)
                return whole[:start] + self.replacement + whole[end:]
        return self.replacement

    def value(self, value: Any) -> Any:
        """A copy of ``value`` with secrets removed, through dicts, lists, tuples and sets.

        Strings are scanned by pattern; mapping entries with a secret key name, and
        ``(name, value)`` pairs such as header tuples, are replaced whole; other objects are returned as they are (render them to
        text first if they may hold secrets).
        """
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: (self.replacement if self.is_secret_key(k) else self.value(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):
            if len(value) == 2 and self.is_secret_key(value[0]):  # a header pair: ("Authorization", "Basic ...")
                return (value[0], self.replacement)
            return tuple(self.value(v) for v in value)
        if isinstance(value, (set, frozenset)):
            return type(value)(self.value(v) for v in value)
        return value


    def preview(self, body: str | bytes, limit: int = 200) -> dict[str, Any]:
        """What a log line may say about a request or response body: its size and a redacted preview.

        The whole body is redacted *before* it is cut to ``limit`` characters, so a
        cut can never leave the readable half of a secret that the patterns would
        have recognised whole. ``{"bytes": 1234, "preview": "...", "truncated": True}``.
        """
        raw = body if isinstance(body, bytes) else body.encode("utf-8", "replace")
        text = self.text(raw.decode("utf-8", "replace"))
        return {"bytes": len(raw), "preview": text[:limit], "truncated": len(text) > limit}


def _lift_flags(parts: list[str]) -> list[str]:
    """Turn a leading global ``(?i)`` inside a part into a scoped ``(?i:...)`` (global flags must open the regex)."""
    out = []
    for p in parts:
        inner = p[3:-1]  # strip the "(?:" ... ")" wrapper
        if inner.startswith("(?i)"):
            out.append(f"(?i:{inner[4:]})")
        else:
            out.append(p)
    return out


def _normalise(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


DEFAULT_REDACTOR = Redactor()


def is_secret_key(name: object) -> bool:
    """Whether a mapping key names a secret, by the default rules."""
    return DEFAULT_REDACTOR.is_secret_key(name)


def redact_text(text: str) -> str:
    """``text`` with credentials replaced by ``[REDACTED]``, by the default rules."""
    return DEFAULT_REDACTOR.text(text)


def redact_preview(body: str | bytes, limit: int = 200) -> dict[str, Any]:
    """A body's size and redacted preview for a log line (see :meth:`Redactor.preview`), by the default rules."""
    return DEFAULT_REDACTOR.preview(body, limit)


def redact(value: Any) -> Any:
    """``value`` with secrets removed (see :meth:`Redactor.value`), by the default rules."""
    return DEFAULT_REDACTOR.value(value)
