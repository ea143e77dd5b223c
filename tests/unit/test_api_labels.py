"""cliques.api.labels: the spelled-out names, and the naming helpers' length and DNS checks."""

import pytest

from cliques.api import labels


def test_names_are_spelled_as_designed() -> None:
    assert labels.GROUP == "cliques.dev"
    assert labels.API_VERSION == "cliques.dev/v1alpha1"
    assert [
        labels.LABEL_CLIQUESET,
        labels.LABEL_GANG_INDEX,
        labels.LABEL_CLIQUE,
        labels.LABEL_POD_INDEX,
        labels.LABEL_TEMPLATE_HASH,
        labels.LABEL_BUCKET,
    ] == [
        "cliques.dev/cliqueset",
        "cliques.dev/gang-index",
        "cliques.dev/clique",
        "cliques.dev/pod-index",
        "cliques.dev/template-hash",
        "cliques.dev/bucket",
    ]
    assert [
        labels.ANNOTATION_HASH_ALGORITHM,
        labels.ANNOTATION_PREVIOUS_HASHES,
        labels.ANNOTATION_SUBDOMAIN,
        labels.ANNOTATION_LEADER_ADDRESS,
        labels.ANNOTATION_INSTANCE,
    ] == [
        "cliques.dev/hash-algorithm",
        "cliques.dev/previous-template-hashes",
        "cliques.dev/subdomain",
        "cliques.dev/leader-address",
        "cliques.dev/instance",
    ]
    assert [
        labels.ENV_SET,
        labels.ENV_GANG_INDEX,
        labels.ENV_CLIQUE,
        labels.ENV_POD_INDEX,
        labels.ENV_CLIQUE_SIZE,
        labels.ENV_LEADER_ADDRESS,
    ] == [
        "CLIQUES_SET",
        "CLIQUES_GANG_INDEX",
        "CLIQUES_CLIQUE",
        "CLIQUES_POD_INDEX",
        "CLIQUES_CLIQUE_SIZE",
        "CLIQUES_LEADER_ADDRESS",
    ]
    assert labels.FIELD_MANAGER == "cliques-operator"


def test_derived_names() -> None:
    clique = labels.clique_name("llama", 3, "worker")
    assert clique == "llama-3-worker"
    assert labels.pod_name(clique, 12) == "llama-3-worker-12"
    assert labels.pod_hostname("worker", 12) == "worker-12"
    assert labels.gang_service_name("llama", 3) == "llama-3"
    assert labels.pod_address("leader", 0, "llama", 3, "serving") == "leader-0.llama-3.serving.svc"


def test_the_crd_limits_always_give_valid_names() -> None:
    # The longest names the CRD admits, with the largest int32 indices.
    cqs = "a" * labels.MAX_CLIQUESET_NAME_LENGTH
    clique = "b" * labels.MAX_CLIQUE_NAME_LENGTH
    top = 2**31 - 1
    assert len(labels.gang_service_name(cqs, top)) == labels.MAX_LABEL_LENGTH
    assert len(labels.pod_hostname(clique, top)) <= labels.MAX_LABEL_LENGTH
    assert labels.pod_name(labels.clique_name(cqs, top, clique), top)


def test_names_too_long_are_refused() -> None:
    with pytest.raises(ValueError, match=r"gang Service name .* more than 63"):
        labels.gang_service_name("a" * 60, 1000)
    with pytest.raises(ValueError, match=r"pod hostname .* more than 63"):
        labels.pod_hostname("b" * 62, 10)
    with pytest.raises(ValueError, match=r"Clique name .* more than 253"):
        labels.clique_name("a" * 63, 10**150, "b" * 60)
    with pytest.raises(ValueError, match=r"CliqueSet name .* more than 63"):
        labels.clique_name("a" * 64, 0, "b")
    with pytest.raises(ValueError, match=r"Pod name .* more than 253"):
        labels.pod_name("c" * 250, 100)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: labels.gang_service_name("9lives", 0), "gang Service name '9lives-0'"),
        (lambda: labels.gang_service_name("my.set", 0), "not a valid DNS name"),
        (lambda: labels.pod_hostname("Leader", 0), "pod hostname 'Leader-0'"),
        (lambda: labels.clique_name("llama", 0, "-x"), "clique name '-x'"),
        (lambda: labels.clique_name("my.set", 0, "x"), "CliqueSet name 'my.set'"),
        (lambda: labels.clique_name("llama", -1, "x"), "gang index must be a non-negative"),
        (lambda: labels.pod_name("llama-0-x", True), "pod index"),
    ],
)
def test_invalid_pieces_are_refused(call: object, match: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=match):
        call()


def test_a_dotted_clique_object_name_is_a_valid_subdomain() -> None:
    # Object names may hold dots even where hostnames may not; the helpers agree with that.
    assert labels.pod_name("a.b-0-c", 1) == "a.b-0-c-1"
