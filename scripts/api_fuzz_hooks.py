"""schemathesis hooks for scripts/api-fuzz.sh (loaded via SCHEMATHESIS_HOOKS).

One thing the OpenAPI document cannot say: `POST /v1/sessions` takes a
`workspace` that must be a directory that exists on the server. Any string
fits the schema, so a generated one is, in positive mode (data the schema
calls valid, which the server must accept), replaced by the fuzz run's own
workspace before the request is sent. Everything else, and every request of
negative mode, goes out as generated; a missing directory's 400 is tested
in tests/all/serve.rs.
"""

import os

import schemathesis

WORKSPACE = os.environ["AGENTBUS_API_FUZZ_WORKSPACE"]


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
