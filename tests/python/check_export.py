"""Reads a strataflow Parquet export with pyarrow and DuckDB and checks it
against `strataflow stats --json` (given as the second argument).

Usage: check_export.py EXPORT_DIR STATS_JSON_FILE
Exits non-zero with a message on the first failed check."""
import json
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

export, stats_file = sys.argv[1], sys.argv[2]
stats = json.load(open(stats_file))
manifest = json.load(open(f"{export}/manifest.json"))

expected = {
    "messages": stats["records"]["message"],
    "blocks": stats["records"]["block"],
    "summaries": stats["records"]["block_summary"],
    "events": stats["records"]["event"],
    "graph_assertions": stats["records"]["graph_assertion"],
    "derivations": stats["records"]["derivation"],
}
for name, rows in expected.items():
    table = pq.read_table(f"{export}/{name}.parquet")
    assert table.num_rows == rows, f"pyarrow: {name} has {table.num_rows} rows, stats say {rows}"
    assert manifest["files"][f"{name}.parquet"] == rows, f"manifest: {name}"

messages = pq.read_table(f"{export}/messages.parquet")
assert pa.types.is_timestamp(messages.schema.field("time").type), messages.schema
events = pq.read_table(f"{export}/events.parquet")
for col in ("mentioned_at", "happened_start", "happened_end"):
    assert pa.types.is_timestamp(events.schema.field(col).type), col
assert pa.types.is_list(events.schema.field("source_messages").type)

con = duckdb.connect()
n = con.execute(f"select count(*) from '{export}/messages.parquet'").fetchone()[0]
assert n == expected["messages"], f"duckdb: {n} messages"
# Events joined to the messages they cite.
joined, events_with_sources = con.execute(
    f"""
    with cited as (
        select e.id as event, unnest(e.source_messages) as message
        from '{export}/events.parquet' e
    )
    select count(*), count(distinct c.event)
    from cited c join '{export}/messages.parquet' m on m.id = c.message
    """
).fetchone()
assert events_with_sources == expected["events"], (events_with_sources, expected["events"])
assert joined >= events_with_sources
# Events per month (a timestamp function on a timestamp column).
months = con.execute(
    f"""select date_trunc('month', mentioned_at) as month, count(*)
        from '{export}/events.parquet' group by 1 order by 1"""
).fetchall()
assert sum(c for _, c in months) == expected["events"]
print(f"export OK: {sum(expected.values())} rows, {len(months)} months of events, {joined} event-message links")
