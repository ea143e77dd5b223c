"""API failures become the right typed errors."""

import json

from cliques.kube import errors


def body(reason: str, code: int, message: str = "m") -> bytes:
    return json.dumps(
        {"kind": "Status", "reason": reason, "code": code, "message": message}
    ).encode()


def test_409_split_into_conflict_and_already_exists() -> None:
    assert isinstance(errors.from_response(409, body("Conflict", 409)), errors.Conflict)
    exists = errors.from_response(409, body("AlreadyExists", 409, 'pods "x" already exists'))
    assert isinstance(exists, errors.AlreadyExists)
    assert "already exists" in str(exists)


def test_status_codes() -> None:
    assert isinstance(errors.from_response(404, body("NotFound", 404)), errors.NotFound)
    assert isinstance(errors.from_response(410, body("Expired", 410)), errors.Gone)
    assert isinstance(errors.from_response(422, body("Invalid", 422)), errors.Invalid)
    assert isinstance(errors.from_response(429, b""), errors.TooManyRequests)
    assert isinstance(errors.from_response(503, b"oops"), errors.ServerError)


def test_non_json_body_kept_in_message() -> None:
    err = errors.from_response(500, b"<html>bad gateway</html>", verb="get", path="/api/v1/pods")
    assert "bad gateway" in str(err) and "/api/v1/pods" in str(err)


def test_a_plain_text_answer_gets_the_http_reason_phrase() -> None:
    err = errors.from_response(404, b"404 page not found", verb="list", path="/apis/x.io/v1/ys")
    assert isinstance(err, errors.NotFound)
    assert str(err) == "list /apis/x.io/v1/ys: 404 Not Found: 404 page not found"
    assert errors.from_response(599, b"odd").reason == "599"
