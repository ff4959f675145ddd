//! The heuristic projector (being written).
