"""Scrape a metrics endpoint with urllib and parse it with prometheus_client's own parser."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def scrape(url: str, token: str | None = None) -> list[Sample]:
    """Every sample the endpoint serves; raises urllib's HTTPError on a refusal."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def values(samples: list[Sample], name: str, **labels: str) -> list[float]:
    """The values of `name` whose labels include `labels`."""
    return [
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def one(samples: list[Sample], name: str, **labels: str) -> float:
    found = values(samples, name, **labels)
    assert len(found) == 1, (name, labels, found)
    return found[0]
