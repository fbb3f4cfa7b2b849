"""schemathesis hooks for scripts/api-fuzz.sh (loaded via SCHEMATHESIS_HOOKS).

One thing the OpenAPI document cannot say: `POST /v1/sessions` (its body)
and `GET /v1/agents` (its query) take a `workspace` that must be a
directory that exists on the server. Any string fits the schema, so a
generated one is, in positive mode (data the schema calls valid, which the
server must accept), replaced by the fuzz run's own workspace before the
request is sent. Likewise an input's `images` must be real images (their
bytes are checked): in positive mode each becomes a 1×1 PNG. Everything else, and every request of
negative mode, goes out as generated; a missing directory's 400 is tested
in tests/all/serve.rs.

And one thing the run must show afterwards: that a fuzzed decision reached
the approval request set up for it. The stateful phase may delete that
session later (a link from the approvals route to `DELETE /v1/sessions/{id}`
is as valid as any), so each accepted decision is written down as it is
answered, in AGENTBUS_API_FUZZ_DECISIONS.
"""

import os

import schemathesis

WORKSPACE = os.environ["AGENTBUS_API_FUZZ_WORKSPACE"]
# A 1x1 PNG, base64.
PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
DECISIONS = os.environ["AGENTBUS_API_FUZZ_DECISIONS"]


@schemathesis.hook
def before_call(context, case, kwargs):
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if (
        positive
        and case.method.upper() == "POST"
        and case.path == "/v1/sessions"
        and isinstance(case.body, dict)
        and isinstance(case.body.get("workspace"), str)
    ):
        case.body["workspace"] = WORKSPACE
    if (
        positive
        and case.method.upper() == "GET"
        and case.path == "/v1/agents"
        and isinstance(case.query, dict)
        and "workspace" in case.query
    ):
        case.query["workspace"] = WORKSPACE
    if (
        positive
        and case.method.upper() == "POST"
        and case.path == "/v1/sessions/{id}/input"
        and isinstance(case.body, dict)
        and isinstance(case.body.get("images"), list)
    ):
        for image in case.body["images"]:
            if isinstance(image, dict):
                image["data"] = PIXEL_PNG
                if "media_type" in image:
                    image["media_type"] = "image/png"


@schemathesis.hook
def after_call(context, case, response):
    if (
        case.method.upper() == "POST"
        and case.path == "/v1/sessions/{id}/approvals/{request_id}"
        and 200 <= response.status_code < 300
    ):
        with open(DECISIONS, "a", encoding="utf-8") as decisions:
            decisions.write(f"{response.status_code} {response.text}\n")
