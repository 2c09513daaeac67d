"""A node's records over HTTP: `run --serve` and the mirror behind `watch URL...`.

- `http_server`: what every endpoint shares (address, bearer token, threaded server).
- `node_stream`: a launcher serves its node's run folder, read-only.
- `stream_mirror`: each node's stream pulled into a local run folder `watch` follows.
"""
