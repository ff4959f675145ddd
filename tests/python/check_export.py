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

# View tables: listed apart in the manifest, typed, joinable to the records.
views = manifest["views"]
assert manifest["profile"], manifest
view_rows = {}
for name in ("view_event_status", "view_weights", "view_block_levels",
             "view_graph_nodes", "view_graph_facts", "view_graph_edges"):
    table = pq.read_table(f"{export}/{name}.parquet")
    assert views[f"{name}.parquet"] == table.num_rows, f"manifest: {name}"
    assert f"{name}.parquet" not in manifest["files"], f"{name} is not a record table"
    view_rows[name] = table.num_rows
status = pq.read_table(f"{export}/view_event_status.parquet")
assert pa.types.is_list(status.schema.field("superseded_by").type), status.schema
assert pa.types.is_boolean(status.schema.field("pinned").type), status.schema
assert status.num_rows == expected["events"], (status.num_rows, expected["events"])
facts = pq.read_table(f"{export}/view_graph_facts.parquet")
for col in ("valid_from", "valid_to"):
    assert pa.types.is_timestamp(facts.schema.field(col).type), col
assert pa.types.is_floating(pq.read_table(f"{export}/view_weights.parquet").schema.field("weight").type)
# Every event has a status; the statuses of the events, per status.
by_status = dict(con.execute(
    f"""
    select s.status, count(*)
    from '{export}/view_event_status.parquet' s
    join '{export}/events.parquet' e on e.id = s.event_id
    group by 1
    """
).fetchall())
assert sum(by_status.values()) == expected["events"], by_status
# Weights of active events, joined through the status view.
active_weights = con.execute(
    f"""
    select count(*), min(w.weight), max(w.weight)
    from '{export}/view_weights.parquet' w
    join '{export}/view_event_status.parquet' s on s.event_id = w.event_id and s.tenant = w.tenant
    where s.status = 'active'
    """
).fetchone()
assert active_weights[0] == by_status.get("active", 0), (active_weights, by_status)
assert 0.0 < active_weights[1] <= active_weights[2] <= 1.0, active_weights
# Block levels name blocks of the export; facts name nodes of the graph table.
levels_joined = con.execute(
    f"""select count(*) from '{export}/view_block_levels.parquet' l
        join '{export}/blocks.parquet' b on b.id = l.block_id and b.thread = l.thread"""
).fetchone()[0]
assert levels_joined == view_rows["view_block_levels"] > 0, levels_joined
orphans = con.execute(
    f"""select count(*) from '{export}/view_graph_facts.parquet' f
        where not exists (select 1 from '{export}/view_graph_nodes.parquet' n
                          where n.node = f.node and n.tenant = f.tenant)"""
).fetchone()[0]
assert orphans == 0, f"{orphans} facts without a node"
print(f"export OK: {sum(expected.values())} rows, {len(months)} months of events, {joined} event-message links, {sum(view_rows.values())} view rows")
