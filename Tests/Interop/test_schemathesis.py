"""schemathesis against openapi.yaml and the real binary: for every operation of the document, requests generated
from its schemas (valid ones, then ones the schema refuses), each answer checked for a 5xx and against what the
document declares (status code, content type, headers, body schema).

Deterministic and bounded: Hypothesis derandomized (the same examples every run, no example database), a fixed
number of examples per operation and mode (OFFER_SIGNER_SCHEMATHESIS_EXAMPLES, default 100), no shrinking beyond what
Hypothesis does to report a failure. The server is `verified_server` (conftest.py): every kind of offer, limits
included, trusting a test root, so generated requests reach the routes' own checks.
"""

from __future__ import annotations

import os

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from support import BUNDLE_ID, OFFER_OPEN, PRODUCT_MONTHLY, REPO_ROOT

SCHEMA = schemathesis.openapi.from_path(REPO_ROOT / "openapi.yaml")
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
# Valid requests for every operation; invalid ones where there is something to get wrong (a body or a parameter).
CASES = [(operation, GenerationMode.POSITIVE) for operation in OPERATIONS] + [
    (operation, GenerationMode.NEGATIVE)
    for operation in OPERATIONS
    if "requestBody" in operation.definition.raw or "parameters" in operation.definition.raw
]
# Valid requests with random names mostly meet 404 `unknown_app`: half of them name the configured app, product and
# offer instead, so they reach the routes' own checks (signed data, eligibility, signing).
KNOWN_NAMES = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}
EXAMPLES = int(os.environ.get("OFFER_SIGNER_SCHEMATHESIS_EXAMPLES", "100"))
# Any 5xx, and any answer the document does not declare.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_the_document_has_every_operation():
    """The parametrized tests below run once per operation: the document must not lose one unnoticed."""
    assert len(OPERATIONS) == 13, [operation.label for operation in OPERATIONS]
    assert len(CASES) == 20, [(operation.label, mode.value) for operation, mode in CASES]


@pytest.fixture(scope="module")
def session():
    with requests.Session() as session:
        yield session


@pytest.mark.parametrize(
    ("operation", "mode"), CASES, ids=[f"{operation.label} {mode.value}" for operation, mode in CASES])
def test_answers_are_as_documented(operation, mode, verified_server, session):
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode), known=st.booleans())
    def answer_is_as_documented(case, known):
        if known and mode == GenerationMode.POSITIVE:
            if isinstance(case.body, dict):
                case.body.update({name: value for name, value in KNOWN_NAMES.items() if name in case.body})
            if case.path_parameters and "bundleId" in case.path_parameters:
                case.path_parameters["bundleId"] = BUNDLE_ID
        response = case.call(base_url=verified_server.base_url, session=session, timeout=10)
        case.validate_response(response, checks=CHECKS)

    answer_is_as_documented()
    assert verified_server.process.poll() is None, verified_server.stderr_path.read_text(errors="replace")
