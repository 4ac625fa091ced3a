//! platform-store: the platform's bottom layer. The collections and fields
//! it knows ([`schema`]), their values ([`values`]), the query language
//! ([`query`]) and the one interface to the database ([`storage`]), on
//! SQLite or PostgreSQL. Nothing above this crate names a database: the
//! host depends on no database crate, only on this one.

pub mod query;
pub mod schema;
pub mod storage;
pub mod testing;
pub mod values;
