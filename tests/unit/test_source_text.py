"""What a Source keeps: redaction by the secret scanner's detectors, and explicit statements read without a model."""

from __future__ import annotations

from powercontext.sources.explicit import statements
from powercontext.sources.redaction import redact


def test_secrets_are_redacted_and_counted_while_hashes_and_prose_stay() -> None:
    sha = "3f2a9c1b7d8e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
    text = (
        "key AKIAIOSFODNN7EXAMPLE\n"
        "db postgres://admin:hunter2pass@db.example.com/prod\n"
        'password = "s3cr3tP@ssw0rd!"\n'
        f"fixed in commit {sha}\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAwhatever\n-----END RSA PRIVATE KEY-----\n"
        "deploys are on Tuesdays"
    )
    result = redact(text)
    for secret in ("AKIAIOSFODNN7EXAMPLE", "hunter2pass", "s3cr3tP@ssw0rd!", "MIIEowIBAAKCAQEAwhatever"):
        assert secret not in result.text
    assert "postgres://admin:[redacted: Basic Auth Credentials]@db.example.com" in result.text
    assert sha in result.text and result.text.endswith("deploys are on Tuesdays")
    assert dict(result.counts) == {
        "AWS Access Key": 1,
        "Basic Auth Credentials": 1,
        "Private Key": 1,
        "Secret Keyword": 1,
    }
    assert redact("nothing secret here").counts == ()


def test_explicit_statements_are_the_lines_that_say_so() -> None:
    found = statements(
        "remember: deploys are on Tuesdays\n- note: staging is pg-2\nFrom now on, lint with ruff\n"
        "we decided to drop Python 3.10\nnever push to main\ncould you fix the build?\n"
        "Remember: deploys are on Tuesdays"
    )
    assert [(s.text, s.kind) for s in found] == [
        ("deploys are on Tuesdays", "fact"),
        ("staging is pg-2", "note"),
        ("From now on, lint with ruff", "constraint"),
        ("we decided to drop Python 3.10", "decision"),
        ("never push to main", "constraint"),
    ]
    assert statements("I always forget; remember me?") == []
