//! `platform-bench`: measurements of the platform that print figures.
//!
//! Run through `scripts/bench.sh`, which builds the release host and
//! extension first. Figures are medians and ratios measured in one run:
//! this machine is shared, so absolute numbers vary more than ratios.
//!
//! One concern per module: [`dataset`] (generation through the items API),
//! [`driver`] (the tokio/hyper load driver), [`scenarios`] (the measured
//! requests), [`report`] (tables and targets), [`load`] (the `load`
//! command), [`gamification`] (the play-award benchmark),
//! [`recording_create`] (a recording's create against its owner's
//! history), [`memory`]
//! (peak memory under hostile bodies), [`compare`] (the table against
//! Directus on the same data, cache on, off and signed in),
//! [`several_hosts`] (two hosts on one database against one), [`sign_in`]
//! (what password hashing costs the other routes), [`assets`] (files:
//! asset reads against ping, first transformations, concurrent uploads'
//! memory), [`peers`] (this host against PocketBase on the same data,
//! side by side, with [`cpu`]: where a row's CPU goes), [`hit`] (one
//! request against a server already running, for profiling by hand),
//! [`hosts`] (starting hosts), and small helpers.

pub mod api;
pub mod assets;
pub mod compare;
pub mod cpu;
pub mod dataset;
pub mod driver;
pub mod gamification;
pub mod hit;
pub mod hosts;
pub mod load;
pub mod memory;
pub mod peers;
pub mod recording_create;
pub mod report;
pub mod rng;
pub mod scenarios;
pub mod several_hosts;
pub mod sign_in;
pub mod stats;
pub mod time;
