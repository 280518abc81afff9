//! The tool cache's SQLite file: opening it (WAL, private, short busy wait), its tables, the
//! column older files lack, and why the file could not be used.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

/// Why the cache could not be used (only ever logged).
#[derive(Debug, thiserror::Error)]
pub(super) enum CacheError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("not open")]
    Closed,
}

pub(super) fn open(path: &Path) -> Result<Connection, CacheError> {
    crate::fsutil::create_private_parent(path)?;
    let db = Connection::open(path)?;
    // Another agent may be writing: wait a little instead of failing at once.
    db.busy_timeout(Duration::from_millis(500))?;
    db.pragma_update(None, "journal_mode", "WAL")?;
    // A cache may lose its last writes on a power cut, but a write must not cost a start-up
    // an fsync: with WAL, NORMAL syncs at checkpoints only.
    db.pragma_update(None, "synchronous", "NORMAL")?;
    // Lookups are by key and touch a few pages each; SQLite's default page cache (up to 2 MB,
    // filled as entries are written) would grow with the number of servers for no gain.
    db.pragma_update(None, "cache_size", -256)?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS tools (
            server TEXT NOT NULL,
            project TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            tools TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (server, project, config_hash)
        );
        CREATE TABLE IF NOT EXISTS failures (
            server TEXT NOT NULL,
            project TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            error TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (server, project, config_hash)
        );
        CREATE TABLE IF NOT EXISTS eras (
            server TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            era TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (server, config_hash)
        );
        CREATE TABLE IF NOT EXISTS discoveries (
            server TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            result TEXT NOT NULL,
            fresh_until INTEGER NOT NULL,
            PRIMARY KEY (server, config_hash)
        )",
    )?;
    add_fresh_until(&db)?;
    // Tool descriptions can reveal what a user works on: keep the file private.
    let _ = crate::fsutil::make_private(path);
    Ok(db)
}

/// Files written before caching hints were honoured have no `fresh_until` column: add it
/// (its rows are then never fresh, as before). Another process may add it at the same time.
fn add_fresh_until(db: &Connection) -> rusqlite::Result<()> {
    let present = |db: &Connection| {
        db.prepare("SELECT 1 FROM pragma_table_info('tools') WHERE name = 'fresh_until'")?
            .exists([])
    };
    if present(db)? {
        return Ok(());
    }
    match db.execute_batch("ALTER TABLE tools ADD COLUMN fresh_until INTEGER") {
        Err(_) if present(db)? => Ok(()),
        other => other,
    }
}
