//! Mail, as Directus sends it: `EMAIL_TRANSPORT=log` (the default) writes
//! each message, links and all, to the host's log at `info`; `smtp` sends
//! it through an SMTP server. Messages are queued and sent by the mailer's
//! own thread, never on a request's path: a request answers in the same
//! time whether or not it mails, and a failing mail server loses nothing
//! the request wrote (the failure is logged).

use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::time::Duration;

use lettre::message::{header::ContentType, Mailbox};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{SmtpTransport, Transport as _};

use crate::env_settings::bool_value;
use crate::settings::{declare, Env};

declare! {
    section "Mail";
    /// `log` (each message written to the log at `info`) or `smtp`.
    EMAIL_TRANSPORT: "EMAIL_TRANSPORT" = "log";
    /// The sender of every message.
    EMAIL_FROM: "EMAIL_FROM" = "no-reply@example.com";
    /// With `smtp`: the server (required).
    EMAIL_SMTP_HOST: "EMAIL_SMTP_HOST";
    /// With `smtp`: the server's port.
    EMAIL_SMTP_PORT: "EMAIL_SMTP_PORT" ~ "`587`, or `465` when secure";
    /// With `smtp`: the user to sign in as.
    EMAIL_SMTP_USER: "EMAIL_SMTP_USER";
    /// With `smtp`: the password.
    EMAIL_SMTP_PASSWORD: "EMAIL_SMTP_PASSWORD";
    /// With `smtp`: `true` for TLS from the first byte (otherwise plain,
    /// upgraded by STARTTLS when the server offers it).
    EMAIL_SMTP_SECURE: "EMAIL_SMTP_SECURE" = "false";
}

/// How many messages may wait for the mailer at once; past it a message
/// is dropped (and logged) rather than hold a request.
const QUEUE: usize = 1_000;

/// How the SMTP transport reaches its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    /// `EMAIL_SMTP_SECURE=true`: TLS from the first byte (port 465);
    /// otherwise plain, upgraded with STARTTLS when the server offers it.
    pub secure: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Each message to the log, at `info`.
    Log,
    Smtp(SmtpSettings),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `EMAIL_FROM`, Directus's default `no-reply@example.com`.
    pub from: String,
    pub transport: Transport,
}

/// A setting of mail that cannot be used; names its variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("EMAIL_TRANSPORT={0}: use log or smtp")]
    UnknownTransport(String),
    #[error("EMAIL_SMTP_HOST is required with EMAIL_TRANSPORT=smtp")]
    MissingHost,
    #[error("EMAIL_SMTP_PORT={0}: not a port number")]
    BadPort(String),
    #[error("EMAIL_SMTP_SECURE={0}: use true or false")]
    BadSecure(String),
    #[error("EMAIL_FROM={0}: not an email address")]
    BadFrom(String),
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, SettingsError> {
        let from = EMAIL_FROM.get(env).unwrap_or_default();
        if from.parse::<Mailbox>().is_err() {
            return Err(SettingsError::BadFrom(from));
        }
        let transport = match EMAIL_TRANSPORT
            .get(env)
            .map(|t| t.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("log") | None => Transport::Log,
            Some("smtp") => {
                let secure = match EMAIL_SMTP_SECURE.get(env) {
                    None => false,
                    Some(v) => bool_value(&v).ok_or(SettingsError::BadSecure(v))?,
                };
                let port = match EMAIL_SMTP_PORT.get(env) {
                    None => {
                        if secure {
                            465
                        } else {
                            587
                        }
                    }
                    Some(p) => p
                        .trim()
                        .parse::<u16>()
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or(SettingsError::BadPort(p))?,
                };
                Transport::Smtp(SmtpSettings {
                    host: EMAIL_SMTP_HOST.get(env).ok_or(SettingsError::MissingHost)?,
                    port,
                    user: EMAIL_SMTP_USER.get(env),
                    password: EMAIL_SMTP_PASSWORD.get(env),
                    secure,
                })
            }
            Some(other) => return Err(SettingsError::UnknownTransport(other.to_string())),
        };
        Ok(Self { from, transport })
    }
}

/// One message: plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub to: String,
    pub subject: String,
    pub text: String,
}

/// Hands messages to the mailer's thread.
#[derive(Clone)]
pub struct Mailer {
    queue: SyncSender<Message>,
}

impl Mailer {
    /// Starts the mailer's thread.
    pub fn start(settings: Settings) -> Self {
        let (queue, receive) = sync_channel::<Message>(QUEUE);
        std::thread::Builder::new()
            .name("mailer".into())
            .spawn(move || {
                let sender = Sender::new(settings);
                while let Ok(message) = receive.recv() {
                    if let Err(e) = sender.send(&message) {
                        log::error!(
                            "could not send the mail \"{}\" to {}: {e}",
                            message.subject,
                            message.to
                        );
                    }
                }
            })
            .expect("start the mailer thread");
        Self { queue }
    }

    /// Queues `message`; returns at once. A full queue drops it (logged).
    pub fn send(&self, message: Message) {
        match self.queue.try_send(message) {
            Ok(()) => {}
            Err(TrySendError::Full(m)) => {
                log::error!("mail queue full: \"{}\" to {} dropped", m.subject, m.to)
            }
            Err(TrySendError::Disconnected(m)) => {
                log::error!("mailer stopped: \"{}\" to {} dropped", m.subject, m.to)
            }
        }
    }
}

/// The mailer thread's side: builds each message and hands it over.
struct Sender {
    from: String,
    smtp: Option<SmtpTransport>,
}

impl Sender {
    fn new(settings: Settings) -> Self {
        let smtp = match &settings.transport {
            Transport::Log => None,
            Transport::Smtp(s) => Some(smtp_transport(s)),
        };
        Self {
            from: settings.from,
            smtp,
        }
    }

    fn send(&self, message: &Message) -> Result<(), String> {
        let Some(smtp) = &self.smtp else {
            log::info!(
                "mail to {}: {}\n{}",
                message.to,
                message.subject,
                message.text
            );
            return Ok(());
        };
        let email = lettre::Message::builder()
            .from(self.from.parse().map_err(|e| format!("EMAIL_FROM: {e}"))?)
            .to(message
                .to
                .parse()
                .map_err(|e| format!("recipient {}: {e}", message.to))?)
            .subject(message.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(message.text.clone())
            .map_err(|e| e.to_string())?;
        smtp.send(&email).map_err(|e| e.to_string())?;
        log::info!("mail \"{}\" sent to {}", message.subject, message.to);
        Ok(())
    }
}

fn smtp_transport(s: &SmtpSettings) -> SmtpTransport {
    let tls = || TlsParameters::new(s.host.clone());
    let tls = match (s.secure, tls()) {
        (true, Ok(params)) => Tls::Wrapper(params),
        (false, Ok(params)) => Tls::Opportunistic(params),
        (_, Err(e)) => {
            log::error!("mail: no TLS to {}: {e}", s.host);
            Tls::None
        }
    };
    let mut builder = SmtpTransport::builder_dangerous(&s.host)
        .port(s.port)
        .tls(tls)
        .timeout(Some(Duration::from_secs(30)));
    if let (Some(user), Some(password)) = (&s.user, &s.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        Settings::from_env(&Env::of(vars))
    }

    #[test]
    fn the_log_is_the_default() {
        let s = with(&[]).unwrap();
        assert_eq!(s.transport, Transport::Log);
        assert_eq!(s.from, "no-reply@example.com");
    }

    #[test]
    fn smtp_reads_its_server() {
        let s = with(&[
            ("EMAIL_TRANSPORT", "smtp"),
            ("EMAIL_SMTP_HOST", "127.0.0.1"),
            ("EMAIL_SMTP_PORT", "2525"),
            ("EMAIL_SMTP_USER", "u"),
            ("EMAIL_SMTP_PASSWORD", "p"),
            ("EMAIL_FROM", "site@example.org"),
        ])
        .unwrap();
        assert_eq!(
            s.transport,
            Transport::Smtp(SmtpSettings {
                host: "127.0.0.1".into(),
                port: 2525,
                user: Some("u".into()),
                password: Some("p".into()),
                secure: false,
            })
        );
        let secure = with(&[
            ("EMAIL_TRANSPORT", "smtp"),
            ("EMAIL_SMTP_HOST", "mail.example.org"),
            ("EMAIL_SMTP_SECURE", "true"),
        ])
        .unwrap();
        assert!(matches!(
            secure.transport,
            Transport::Smtp(SmtpSettings {
                port: 465,
                secure: true,
                ..
            })
        ));
    }

    #[test]
    fn bad_settings_are_named() {
        assert_eq!(
            with(&[("EMAIL_TRANSPORT", "sendmail")]).unwrap_err(),
            SettingsError::UnknownTransport("sendmail".into())
        );
        assert_eq!(
            with(&[("EMAIL_TRANSPORT", "smtp")]).unwrap_err(),
            SettingsError::MissingHost
        );
        assert_eq!(
            with(&[
                ("EMAIL_TRANSPORT", "smtp"),
                ("EMAIL_SMTP_HOST", "h"),
                ("EMAIL_SMTP_PORT", "x")
            ])
            .unwrap_err(),
            SettingsError::BadPort("x".into())
        );
        assert!(matches!(
            with(&[("EMAIL_FROM", "nobody")]).unwrap_err(),
            SettingsError::BadFrom(_)
        ));
    }
}
