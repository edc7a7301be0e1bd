//! The lab's tables the trace's analysis reads (`capability::lab`, `remedies::lab`), derived here from the
//! committed recordings, beside the catalogue whose facts they read: `capabilities` (the ways each API
//! function was seen to wait) and `remedies` (what the remedies the findings propose were measured to do).

pub mod capabilities;
pub mod remedies;
