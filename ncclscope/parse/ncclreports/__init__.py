"""Parse stage, NCCL's own reports: RAS (`ncclras` text and JSON), NCCL Inspector JSON lines, `ncclparam -l`.

`sniff` tells them by their first bytes (imported by the input classifier, so it imports no Polars);
`read` reads them into one `NcclReports`; `ras_text`, `ras_json`, `inspector` and `ncclparam` hold each
format's reader, `ras_model` the RAS records both RAS readers build.
"""
