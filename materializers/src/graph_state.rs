//! The graph state view (being written).
