//! Applying the schema: the engine's migrator, after accepting the checksums of migrations
//! whose comments were reworded after they shipped.

use sqlx::migrate::Migrator;
use sqlx::Pool;

use super::engine::{stmt, Engine};

/// A migration whose comments were reworded after it shipped (its SQL is unchanged): its
/// version and the checksum a database that applied the earlier text has on record.
pub type Reworded = (i64, &'static str);

/// Applies `migrator`'s pending migrations to `pool`'s database, first recording the
/// current checksum of every migration in `reworded` that the database applied in its
/// earlier wording, so that the migrator finds it up to date.
pub async fn run<DB: Engine>(
    pool: &Pool<DB>,
    migrator: &Migrator,
    reworded: &[Reworded],
) -> anyhow::Result<()>
where
    DB::Connection: sqlx::migrate::Migrate,
{
    let mut conn = pool.acquire().await?;
    for &(version, earlier) in reworded {
        let Some(now) = migrator.iter().find(|m| m.version == version) else {
            continue;
        };
        let earlier = hex::decode(earlier)?;
        let updated = stmt::<DB>(
            "UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2 AND checksum = $3",
        )
        .bind(now.checksum.as_ref())
        .bind(version)
        .bind(earlier)
        .execute(&mut conn)
        .await;
        // No migrations table yet: a new database.
        if updated.is_err() {
            break;
        }
    }
    drop(conn);
    migrator.run(pool).await?;
    Ok(())
}
