"""Schemathesis hooks for Weaver's API (loaded by run.sh through SCHEMATHESIS_HOOKS).

Two rules of the API compare values JSON Schema cannot compare; the OpenAPI document states
them in words, and these hooks make the cases Schemathesis generates as valid follow them too
(negative cases are left alone):

* An agent takes only the attachment kinds it lists in `GET /ai/capabilities` (400
  `unsupported_attachment` otherwise). Agents are configuration, so the document cannot list
  them; the hook reads them from the server under test (WEAVER_SCHEMATHESIS_BASE, with the
  credentials in WEAVER_SCHEMATHESIS_AUTH) and drops from a valid chat request the
  attachments its agent does not take.
* A time range's `from` must not be after its `to` (400 `invalid_time_range`), on `GET
/ai/audit` and in a chat attachment's `timeRange`. JSON Schema cannot compare two values, so
the OpenAPI document states the rule in words; these hooks put the two instants of a
generated case in order, so that a case meant to be valid is valid by that rule too. Values
that are not both instants (negative cases) are left as they are.
"""

import json
import os
import urllib.request
from datetime import datetime

import schemathesis


def _agents():
    """Agent name -> the attachment kinds it takes, and the default agent's name."""
    base = os.environ.get("WEAVER_SCHEMATHESIS_BASE")
    if not base:
        return {}, None
    request = urllib.request.Request(
        base + "/ai/capabilities",
        headers={"Authorization": os.environ.get("WEAVER_SCHEMATHESIS_AUTH", "")},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        capabilities = json.load(response)
    agents = {agent["name"]: set(agent["attachmentKinds"]) for agent in capabilities["agents"]}
    default = next((agent["name"] for agent in capabilities["agents"] if agent.get("default")), None)
    return agents, default


AGENTS, DEFAULT_AGENT = _agents()


def _is_positive(case):
    meta = getattr(case, "meta", None)
    return meta is not None and meta.generation.mode.is_positive


def _instant(value):
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    # Only instants with an offset are RFC 3339 date-times.
    return parsed if parsed.tzinfo is not None else None


def _in_order(container, start, end):
    """Swaps `container[start]` and `container[end]` when both are instants out of order."""
    if not isinstance(container, dict):
        return
    first, last = _instant(container.get(start)), _instant(container.get(end))
    if first is not None and last is not None and first > last:
        container[start], container[end] = container[end], container[start]


@schemathesis.hook("map_case").apply_to(method="GET", path="/ai/audit")
def audit_range_in_order(context, case):
    _in_order(case.query, "from", "to")
    return case


@schemathesis.hook("map_case").apply_to(method="POST", path="/ai/chat")
def chat_attachments_valid(context, case):
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("attachments"), list):
        return case
    for attachment in body["attachments"]:
        if isinstance(attachment, dict):
            _in_order(attachment.get("timeRange"), "from", "to")
    agent = body.get("agent") or DEFAULT_AGENT
    if _is_positive(case) and agent in AGENTS:
        takes = AGENTS[agent]

        def taken(attachment):
            kind = attachment.get("kind") if isinstance(attachment, dict) else None
            return ("ActivitySelection" if kind == "Activity" else kind) in takes

        body["attachments"] = [a for a in body["attachments"] if taken(a)]
    return case
