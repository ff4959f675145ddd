//! The view tables of an export: a profile's views of each tenant, one
//! Parquet file per view, typed like the record tables (ids as hex,
//! timestamps as UTC millisecond timestamps, lists as lists). Nodes are
//! named `type:name` (their canonical key) in every graph table, so facts
//! and edges join to nodes as text.

use std::collections::BTreeMap;
use std::path::Path;

use arrow::array::{
    BooleanBuilder, Float64Builder, ListBuilder, StringBuilder, TimestampMillisecondBuilder,
    UInt16Builder, UInt32Builder, UInt64Builder,
};
use strataflow_materializers::block_levels::ThreadLevels;
use strataflow_materializers::event_status::EventStatusView;
use strataflow_materializers::graph_state::GraphState;
use strataflow_materializers::weights::WeightsView;

use super::{Column, ExportError, Table, Value, hex, hexes, name_of, ts};

/// The views of one tenant under one profile, as the export writes them.
#[derive(Clone, Debug)]
pub struct TenantViews {
    /// Tenant.
    pub tenant: String,
    /// Event status.
    pub status: EventStatusView,
    /// Weights.
    pub weights: WeightsView,
    /// Block levels per thread.
    pub levels: Vec<(String, ThreadLevels)>,
    /// The graph state.
    pub graph: GraphState,
    /// View name → digest (as `strataflow views` prints it).
    pub digests: BTreeMap<String, String>,
}

/// `type:name` of a node key.
fn label(key: &strataflow_log::record::NodeKey) -> String {
    format!("{}:{}", key.node_type.name(), key.name)
}

/// Writes the view tables of every tenant; returns file name → rows.
pub(super) fn write(
    dir: &Path,
    views: &[TenantViews],
) -> Result<BTreeMap<String, u64>, ExportError> {
    use Column as C;
    let s = || C::Str(StringBuilder::new());
    let u64c = || C::U64(UInt64Builder::new());
    let u32c = || C::U32(UInt32Builder::new());
    let u16c = || C::U16(UInt16Builder::new());
    let bool_c = || C::Bool(BooleanBuilder::new());
    let tsc = || C::Ts(TimestampMillisecondBuilder::new());
    let list = || C::StrList(ListBuilder::new(StringBuilder::new()));
    let mut status = Table::plain(
        dir,
        "view_event_status",
        vec![
            ("tenant", s()),
            ("event_id", s()),
            ("status", s()),
            ("pinned", bool_c()),
            ("superseded_by", list()),
            ("conflicts_with", list()),
            ("governance", list()),
        ],
    );
    let mut weights = Table::plain(
        dir,
        "view_weights",
        vec![
            ("tenant", s()),
            ("event_id", s()),
            ("mention_count", u32c()),
            ("last_adopted_turn", u64c()),
            ("current_turn", u64c()),
            ("weight", C::F64(Float64Builder::new())),
        ],
    );
    let mut levels = Table::plain(
        dir,
        "view_block_levels",
        vec![
            ("tenant", s()),
            ("thread", s()),
            ("block_id", s()),
            ("position", u32c()),
            ("anchor_level", u16c()),
            ("anchor_position", u32c()),
            ("age", u32c()),
            ("level", u16c()),
        ],
    );
    let mut nodes = Table::plain(
        dir,
        "view_graph_nodes",
        vec![
            ("tenant", s()),
            ("node", s()),
            ("node_type", s()),
            ("name", s()),
            ("aliases", list()),
            ("tags", list()),
            ("source_events", list()),
            ("assertions", list()),
        ],
    );
    let mut facts = Table::plain(
        dir,
        "view_graph_facts",
        vec![
            ("tenant", s()),
            ("node", s()),
            ("key", s()),
            ("values", list()),
            ("mode", s()),
            ("valid_from", tsc()),
            ("valid_to", tsc()),
            ("current", bool_c()),
            ("source_events", list()),
            ("assertion", s()),
        ],
    );
    let mut edges = Table::plain(
        dir,
        "view_graph_edges",
        vec![
            ("tenant", s()),
            ("from_node", s()),
            ("relation", s()),
            ("to_node", s()),
            ("functional", bool_c()),
            ("valid_from", tsc()),
            ("valid_to", tsc()),
            ("current", bool_c()),
            ("source_events", list()),
            ("assertion", s()),
        ],
    );
    for v in views {
        let tenant = v.tenant.as_str();
        for e in v.status.iter() {
            status.push_row(vec![
                Value::Str(tenant),
                Value::Str(&hex(&e.id)),
                Value::Str(&name_of(&e.status)),
                Value::Bool(e.pinned),
                Value::StrList(hexes(&e.superseded_by)),
                Value::StrList(hexes(&e.conflicts_with)),
                Value::StrList(hexes(&e.governance)),
            ])?;
        }
        for (id, w) in v.weights.iter() {
            weights.push_row(vec![
                Value::Str(tenant),
                Value::Str(&hex(id)),
                Value::U32(w.mention_count),
                Value::U64(w.last_adopted_turn),
                Value::U64(v.weights.current_turn),
                Value::F64(w.weight),
            ])?;
        }
        for (thread, thread_levels) in &v.levels {
            for b in &thread_levels.blocks {
                levels.push_row(vec![
                    Value::Str(tenant),
                    Value::Str(thread),
                    Value::Str(&hex(&b.block)),
                    Value::U32(b.position),
                    Value::U16(u16::from(b.anchor_level)),
                    Value::U32(b.anchor_position),
                    Value::U32(b.age),
                    Value::U16(u16::from(b.level)),
                ])?;
            }
        }
        for n in v.graph.nodes() {
            let node = label(&n.key);
            nodes.push_row(vec![
                Value::Str(tenant),
                Value::Str(&node),
                Value::Str(n.node_type.name()),
                Value::Str(&n.name),
                Value::StrList(n.aliases.clone()),
                Value::StrList(n.tags.clone()),
                Value::StrList(hexes(&n.source_events)),
                Value::StrList(hexes(&n.assertions)),
            ])?;
            for f in &n.facts {
                facts.push_row(vec![
                    Value::Str(tenant),
                    Value::Str(&node),
                    Value::Str(&f.key),
                    Value::StrList(f.values.clone()),
                    Value::Str(&name_of(&f.mode)),
                    ts(f.valid_from),
                    ts(f.valid_to),
                    Value::Bool(f.current),
                    Value::StrList(hexes(&f.source_events)),
                    Value::Str(&hex(&f.assertion)),
                ])?;
            }
        }
        for e in v.graph.edges() {
            edges.push_row(vec![
                Value::Str(tenant),
                Value::Str(&label(&e.from)),
                Value::Str(&e.relation),
                Value::Str(&label(&e.to)),
                Value::Bool(e.functional),
                ts(e.valid_from),
                ts(e.valid_to),
                Value::Bool(e.current),
                Value::StrList(hexes(&e.source_events)),
                Value::Str(&hex(&e.assertion)),
            ])?;
        }
    }
    let mut files = BTreeMap::new();
    for table in [status, weights, levels, nodes, facts, edges] {
        let (name, rows) = table.close()?;
        files.insert(format!("{name}.parquet"), rows);
    }
    Ok(files)
}
