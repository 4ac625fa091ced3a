//! The gamification layer: points, time-decayed scores, achievements and
//! the leaderboard (docs/service-api.md "Gamification", rules 1–7).
//!
//! * [`score`]: the decay-anchored sum that makes scores and ranks exact at
//!   constant cost.
//! * [`progress`]: rule 5, pure.
//! * [`facts`]: rule 3 from scratch, for batches of users.
//! * [`ledger`]: a user's stats row inside one transaction.
//! * [`check`]: rule 4.
//! * [`awards`]: the triggers and point values.
//! * [`hooks`]: the triggers and counters that follow every write, inside
//!   its transaction.
//! * `crate::own_writes`: the ledger's own writes, which those hooks let pass.
//! * [`recalc`]: rule 6, the hourly `recalculate-stats` schedule.
//! * [`endpoints`]: the three public endpoints.
//! * [`ranks`], [`ties`]: the kept count trees that answer a rank and find a
//!   deep leaderboard page in a few reads.
//! * [`shown_users`]: the fields of a user the leaderboard shows, kept on
//!   the user's stats row.

pub mod awards;
pub mod check;
pub mod endpoints;
pub mod facts;
pub mod hooks;
pub mod ledger;
pub mod progress;
pub mod ranks;
pub mod recalc;
pub mod score;
pub mod shown_users;
pub mod ties;
pub mod time;
