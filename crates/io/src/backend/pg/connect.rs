//! The pg backend's connection settings: only from the environment, which the commands
//! read (`GPUPLAN_PG_DSN`, else libpq's `PG*` variables); never from the configuration.

// One `Diagnostic` explains a refusal; boxing buys nothing.
#![allow(clippy::result_large_err)]

use crate::backend::GP961;
use crate::diag::{Diagnostic, quoted};
use std::time::Duration;

/// GP961 saying why the settings cannot give a connection.
fn bad(what: String) -> Diagnostic {
    Diagnostic::error(GP961, format!("the pg backend cannot connect: {what}")).with_help(
        "set GPUPLAN_PG_DSN (`host=/run/postgresql dbname=gpuplan user=ci`, or a \
         postgresql:// URL) or PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE; \
         credentials come only from the environment, never from the configuration",
    )
}

/// The connection settings, as the environment gives them (read by the commands).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Connect {
    /// `GPUPLAN_PG_DSN`: `host=/run/pg dbname=gpuplan` or `postgresql://...`.
    pub dsn: Option<String>,
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub dbname: Option<String>,
    pub connect_timeout: Option<String>,
}

impl Connect {
    /// The settings from environment variables, read through `var`.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Connect {
        let v = |k: &str| var(k).filter(|s| !s.is_empty());
        Connect {
            dsn: v("GPUPLAN_PG_DSN"),
            host: v("PGHOST"),
            port: v("PGPORT"),
            user: v("PGUSER").or_else(|| v("USER")),
            password: v("PGPASSWORD"),
            dbname: v("PGDATABASE"),
            connect_timeout: v("PGCONNECT_TIMEOUT"),
        }
    }

    /// The client configuration, or GP961 saying what is missing or wrong.
    pub(crate) fn config(&self) -> Result<postgres::Config, Diagnostic> {
        let mut c = self.base()?;
        if c.get_user().is_none() {
            match &self.user {
                Some(u) => {
                    c.user(u);
                }
                None => return Err(bad("no user: set PGUSER".into())),
            }
        }
        if c.get_password().is_none() {
            if let Some(p) = &self.password {
                c.password(p);
            }
        }
        if c.get_connect_timeout().is_none() {
            let secs = match &self.connect_timeout {
                Some(t) => t.parse().map_err(|_| {
                    bad(format!(
                        "PGCONNECT_TIMEOUT {} is not a number of seconds",
                        quoted(t)
                    ))
                })?,
                None => 10,
            };
            c.connect_timeout(Duration::from_secs(secs));
        }
        if c.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(bad(
                "sslmode=require: this gpuplan connects without TLS (a Unix socket or a \
                 trusted network); use sslmode=disable or prefer"
                    .into(),
            ));
        }
        c.application_name("gpuplan");
        Ok(c)
    }

    /// The DSN's configuration, else host, port and database from `PG*`.
    fn base(&self) -> Result<postgres::Config, Diagnostic> {
        Ok(match &self.dsn {
            // The DSN may hold a password: never quoted back.
            Some(dsn) => dsn
                .parse::<postgres::Config>()
                .map_err(|_| bad("GPUPLAN_PG_DSN is not a valid connection string".into()))?,
            None => {
                let mut c = postgres::Config::new();
                let Some(host) = &self.host else {
                    return Err(bad("neither GPUPLAN_PG_DSN nor PGHOST is set".into()));
                };
                c.host(host);
                if let Some(p) = &self.port {
                    c.port(
                        p.parse()
                            .map_err(|_| bad(format!("PGPORT {} is not a port", quoted(p))))?,
                    );
                }
                if let Some(d) = &self.dbname {
                    c.dbname(d);
                }
                c
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Connect {
        Connect::from_env(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn settings_come_from_the_environment_and_never_echo_a_dsn() {
        let d = env(&[]).config().unwrap_err();
        assert_eq!(d.code, GP961);
        let c = env(&[("PGHOST", "/run/pg"), ("PGUSER", "ci"), ("PGPORT", "5433")])
            .config()
            .unwrap();
        assert_eq!(c.get_user(), Some("ci"));
        assert_eq!(c.get_ports(), &[5433]);
        let d = env(&[("GPUPLAN_PG_DSN", "postgresql://ci:hunter2@db:notaport/x")])
            .config()
            .unwrap_err();
        assert!(
            d.code == GP961 && !d.message.contains("hunter2"),
            "{}",
            d.message
        );
        let d = env(&[("GPUPLAN_PG_DSN", "host=db user=ci sslmode=require")])
            .config()
            .unwrap_err();
        assert!(d.message.contains("sslmode=require"), "{}", d.message);
        let c = env(&[("GPUPLAN_PG_DSN", "host=db user=ci"), ("PGPASSWORD", "pw")])
            .config()
            .unwrap();
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        let d = env(&[("PGHOST", "db"), ("PGUSER", "ci"), ("PGPORT", "x")])
            .config()
            .unwrap_err();
        assert!(d.message.contains("PGPORT"), "{}", d.message);
    }
}
