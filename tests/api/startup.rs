//! What the binary says when it cannot start: a command on a SQLite file that does not
//! exist or a PostgreSQL database without Reftrack's tables (refused, nothing created), a database it cannot open (which one, and why, on
//! one line), a SQLite file another server serves, a log filter that does not parse; and its log lines off a terminal (no
//! colour codes).

use std::path::Path;
use std::process::{Command, Output};

use std::time::Duration;

use crate::common::server::{command, free_port, Server};

/// `reftrack ARGS` in `dir` with `env`.
fn run_in(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd: Command = command(env);
    cmd.current_dir(dir).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn commands_on_a_missing_sqlite_file_refuse_it_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 5] = [
        &["admin", "rotate-admin-token"],
        &["admin", "list-workspaces"],
        &["verify"],
        &["commissions", "list", "1"],
        &["payouts", "list", "1"],
    ];
    // The default URL (sqlite://reftrack.db, in the working directory) and a named one.
    for env in [
        vec![],
        vec![("REFTRACK_DATABASE_URL", "sqlite://missing2.db")],
    ] {
        let file = if env.is_empty() {
            "reftrack.db"
        } else {
            "missing2.db"
        };
        for args in commands {
            let out = run_in(dir.path(), &env, args);
            assert!(!out.status.success(), "{args:?} on {file} succeeded");
            let said = stderr(&out);
            assert!(
                said.contains(&format!("no database at {file}"))
                    && said.contains("`reftrack serve` or `reftrack migrate` creates it"),
                "{args:?}: {said}"
            );
            assert!(out.stdout.is_empty(), "{args:?} printed an answer");
            assert!(
                names(dir.path()).is_empty(),
                "{args:?}: {:?}",
                names(dir.path())
            );
        }
    }
    // `migrate` creates it; then the commands work on it.
    let env = [("REFTRACK_DATABASE_URL", "sqlite://missing2.db")];
    assert!(run_in(dir.path(), &env, &["migrate"]).status.success());
    assert!(dir.path().join("missing2.db").is_file());
    let out = run_in(dir.path(), &env, &["verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_in(dir.path(), &env, &["admin", "rotate-admin-token"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A PostgreSQL database without Reftrack's tables is refused as a missing file is, and
/// given none: a mistyped database name must not gain a schema.
#[tokio::test]
async fn commands_on_a_postgres_database_without_tables_refuse_it_and_create_nothing() {
    let url = crate::common::fresh_postgres_url().await;
    let target = url::Url::parse(&url).unwrap();
    let what = format!(
        "{}:{}{}",
        target.host_str().unwrap(),
        target.port().unwrap_or(5432),
        target.path()
    );
    crate::common::dropping_database(url.clone(), async {
        let dir = tempfile::tempdir().unwrap();
        let env = [("REFTRACK_DATABASE_URL", url.as_str())];
        let tables = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'";
        for args in [
            &["verify"][..],
            &["admin", "list-workspaces"],
            &["admin", "rotate-admin-token"],
        ] {
            let out = run_in(dir.path(), &env, args);
            assert!(!out.status.success(), "{args:?} succeeded");
            let said = stderr(&out);
            assert!(
                said.contains(&format!(
                    "no database at {what}: `reftrack serve` or `reftrack migrate` creates it"
                )),
                "{args:?}: {said}"
            );
            assert_eq!(
                crate::common::reftrack_count(&url, tables).await,
                0,
                "{args:?}"
            );
        }
        assert!(run_in(dir.path(), &env, &["migrate"]).status.success());
        let out = run_in(dir.path(), &env, &["verify"]);
        assert!(out.status.success(), "{}", stderr(&out));
    })
    .await;
}

/// Starts `reftrack serve` on `url` and waits for it to fail: its error output.
fn failed_start(url: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[
            ("REFTRACK_DATABASE_URL", url),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ],
        &["serve"],
    );
    assert!(!out.status.success(), "{url} served");
    stderr(&out)
}

/// The one error line of `said` (beside its log lines), which holds no text twice.
fn one_line(said: &str) -> &str {
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    let line = errors[0];
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(!parts[i + 1..].contains(part), "{part:?} twice: {line}");
    }
    line
}

/// The file `serve` creates is its owner's alone (as a backup is), and a second `serve`
/// on it refuses to start while the first runs, naming the file; once the first has
/// stopped, a new one starts. A management command runs beside a server.
#[test]
fn a_sqlite_file_is_created_owner_only_and_served_by_one_process() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.db");
    let url = format!("sqlite://{}", file.display());
    let mut first = Server::on(&url, "admin-one-0123456789", &[]);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    let said = failed_start(&url);
    assert_eq!(
        one_line(&said),
        format!(
            "error: another reftrack serve is using the database {}; one server process \
             serves a SQLite file (several processes share a PostgreSQL database)",
            file.display()
        )
    );
    let env = [("REFTRACK_DATABASE_URL", url.as_str())];
    let out = run_in(dir.path(), &env, &["verify"]);
    assert!(out.status.success(), "{}", stderr(&out));

    first.signal("TERM");
    assert!(first.wait_exit(Duration::from_secs(10)).is_some());
    drop(Server::on(&url, "admin-one-0123456789", &[]));
}

#[test]
fn a_sqlite_file_that_cannot_be_opened_is_named_with_the_reason() {
    let said = failed_start("sqlite:///nonexistent/dir/x.db");
    assert_eq!(
        one_line(&said),
        "error: cannot open the database /nonexistent/dir/x.db: \
         the directory /nonexistent/dir does not exist"
    );
}

#[tokio::test]
async fn a_postgres_server_that_cannot_be_reached_is_named_with_the_reason() {
    // Nothing listens on a port that was free a moment ago: refused, tried again for the
    // time a server may take to start, and then said.
    let port = free_port();
    let url = format!("postgres://postgres:hunter2secret@127.0.0.1:{port}/x");
    let said = tokio::task::spawn_blocking(move || failed_start(&url))
        .await
        .unwrap();
    let line = one_line(&said);
    assert!(
        line.starts_with(&format!(
            "error: cannot open the database 127.0.0.1:{port}/x: "
        )),
        "{line}"
    );
    assert!(
        line.to_lowercase().contains("connection refused") && line.ends_with(", still after 5 s"),
        "{line}"
    );
    assert!(
        !said.contains("hunter2secret"),
        "the password is shown: {said}"
    );

    // A database the server does not have.
    let mut url = url::Url::parse(&crate::common::postgres_server()).unwrap();
    url.set_path("/reftrack_no_such_database");
    let host = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let said = tokio::task::spawn_blocking(move || failed_start(url.as_str()))
        .await
        .unwrap();
    assert_eq!(
        one_line(&said),
        format!(
            "error: cannot open the database {host}/reftrack_no_such_database: \
             database \"reftrack_no_such_database\" does not exist"
        )
    );
}

#[test]
fn a_log_filter_that_does_not_parse_stops_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &[("REFTRACK_LOG", "reftrack=loud")],
        &["migrate"],
    );
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.starts_with("error: REFTRACK_LOG is not a log filter (`reftrack=loud`)"),
        "{said}"
    );
    assert!(
        names(dir.path()).is_empty(),
        "it ran: {:?}",
        names(dir.path())
    );
}

#[test]
fn log_lines_off_a_terminal_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    // A misspelt setting: a warning, with the setting the README's example says it meant.
    let mut cmd = command(&[("REFTRACK_LISTN", "127.0.0.1:9999")]);
    cmd.env_remove("NO_COLOR").current_dir(dir.path());
    let out = cmd
        .args(["healthcheck", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    let said = stderr(&out);
    assert!(
        said.contains(
            "REFTRACK_LISTN is not a setting and is ignored; did you mean REFTRACK_LISTEN?"
        ),
        "{said}"
    );
    assert!(!said.contains('\u{1b}'), "colour codes in {said:?}");
}
