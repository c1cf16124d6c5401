//! slurmdbd: the accounting daemon, behind an `AccountingStore` trait with a
//! SQLite backend.
