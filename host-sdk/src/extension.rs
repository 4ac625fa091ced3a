//! The description of an extension: identity, migrations, routes, hooks,
//! schedules and init, assembled with a builder.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::context::Context;
use crate::error::BoxError;
use crate::events::{ItemEvent, PendingWrite, RawItemEvent};
use crate::router::Router;
use crate::schema::Step;

type ParsedHook = dyn Fn(&ItemEvent, &Context<'_>) -> Result<(), BoxError> + Send + Sync;
type RawHook = dyn Fn(&RawItemEvent<'_>, &Context<'_>) -> Result<(), BoxError> + Send + Sync;
type WriteHookFn = dyn Fn(&mut PendingWrite, &Context<'_>) -> Result<(), BoxError> + Send + Sync;

/// A before-write hook and the collections it watches (`None`: all).
pub(crate) struct WriteHook {
    pub collections: Option<Vec<String>>,
    pub run: Box<WriteHookFn>,
}

impl WriteHook {
    pub fn wants(&self, collection: &str) -> bool {
        self.collections
            .as_ref()
            .is_none_or(|list| list.iter().any(|c| c == collection))
    }
}

/// What a hook is: a function of the parsed event, or of its text.
pub(crate) enum HookFn {
    Parsed(Box<ParsedHook>),
    Raw(Box<RawHook>),
}

/// A hook and the collections it watches (`None`: all).
pub(crate) struct Hook {
    pub collections: Option<Vec<String>>,
    pub run: HookFn,
}

/// The collections a hook watches (SDK 1.10): [`Collections::All`], or
/// some named ones, given as a borrowed list of names:
/// `&["videos", "recordings"]`, `&names` of a `Vec`, a slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collections {
    /// Every collection, those made later included.
    All,
    /// These collections only (none, when the list is empty).
    Only(Vec<String>),
}

impl Collections {
    /// The list, `None` for all.
    fn into_list(self) -> Option<Vec<String>> {
        match self {
            Collections::All => None,
            Collections::Only(list) => Some(list),
        }
    }
}

fn names<S: AsRef<str>>(collections: &[S]) -> Collections {
    Collections::Only(collections.iter().map(|c| c.as_ref().to_string()).collect())
}

impl<S: AsRef<str>> From<&[S]> for Collections {
    fn from(collections: &[S]) -> Self {
        names(collections)
    }
}

impl<S: AsRef<str>, const N: usize> From<&[S; N]> for Collections {
    fn from(collections: &[S; N]) -> Self {
        names(collections)
    }
}

impl<S: AsRef<str>> From<&Vec<S>> for Collections {
    fn from(collections: &Vec<S>) -> Self {
        names(collections)
    }
}

impl Hook {
    pub fn wants(&self, collection: &str) -> bool {
        self.collections
            .as_ref()
            .is_none_or(|list| list.iter().any(|c| c == collection))
    }
}
pub(crate) type Job = Box<dyn Fn(&Context<'_>) -> Result<(), BoxError> + Send + Sync>;

/// When a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// At a fixed interval, first one interval after the host starts.
    Every(Duration),
    /// A cron expression with a seconds field: `sec min hour day month weekday`.
    Cron(String),
}

pub(crate) struct ScheduledJob {
    pub name: String,
    pub when: Schedule,
    pub job: Job,
}

/// The collections some hook wants, given each hook's list (`None`: all
/// of them).
fn interest<'h>(lists: impl IntoIterator<Item = Option<&'h Vec<String>>>) -> Option<Vec<String>> {
    let mut all = Vec::new();
    for list in lists {
        all.extend(list?.iter().cloned());
    }
    all.sort();
    all.dedup();
    Some(all)
}

/// Everything an extension registers with the host.
///
/// Item hooks are registered with one method per moment of a write, each
/// taking the collections it watches ([`Collections::All`] for every
/// one), in the order they run:
/// [`before_write_in`](Extension::before_write_in) (before the write, may
/// change or refuse it), [`before_commit_in`](Extension::before_commit_in)
/// (after the write, in its transaction, may refuse it) and
/// [`after_commit_in`](Extension::after_commit_in) (after the commit).
/// `_raw_in` takes the event as the host's JSON text instead of trees.
pub struct Extension {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) migrations: Vec<(String, Vec<Step>)>,
    pub(crate) router: Router,
    pub(crate) hooks: Vec<Hook>,
    /// Hooks run inside the writing transaction, before its commit.
    pub(crate) before_commit: Vec<Hook>,
    /// Hooks run inside the writing transaction, before the write (1.9).
    pub(crate) before_write: Vec<WriteHook>,
    /// The extensions needed first: (id, semver requirement) (1.9).
    pub(crate) requires: Vec<(String, String)>,
    /// Per collection, the only fields the item hooks read (1.14).
    pub(crate) hook_fields: BTreeMap<String, BTreeSet<String>>,
    pub(crate) schedules: Vec<ScheduledJob>,
    pub(crate) init: Option<Job>,
}

impl Extension {
    /// `id` is the mount point (`/{id}`) and the log target.
    pub fn new(id: &str, name: &str, version: &str) -> Self {
        Self {
            id: id.to_string(),
            name: name.to_string(),
            version: version.to_string(),
            migrations: Vec::new(),
            router: Router::new(),
            hooks: Vec::new(),
            before_commit: Vec::new(),
            before_write: Vec::new(),
            requires: Vec::new(),
            hook_fields: BTreeMap::new(),
            schedules: Vec::new(),
            init: None,
        }
    }

    /// The id the extension is mounted under (`/<id>`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Says that this extension needs the extension `id` loaded first, in
    /// a version `versions` allows (a semver requirement: `">=0.1, <2"`,
    /// `"^1.2"`, `"*"`) (SDK 1.9). A host loads libraries so that each
    /// comes after what it requires (its migrations may then name the
    /// other's collections), and refuses, with a log line, one whose
    /// requirement is missing, of another version, or part of a cycle,
    /// serving the rest.
    pub fn requires(mut self, id: &str, versions: &str) -> Self {
        self.requires.push((id.to_string(), versions.to_string()));
        self
    }

    /// The extensions this one needs first: (id, semver requirement).
    #[doc(hidden)]
    pub fn requirements(&self) -> &[(String, String)] {
        &self.requires
    }

    /// Promises that this extension's item hooks (in-transaction and
    /// after-commit, parsed and raw) read only `fields` of `collection`'s
    /// payloads and records: the host may then pass them with only those
    /// members and the primary key, and skip building, copying and
    /// parsing the rest (a recording's thousands of events, say). Called
    /// again for the same collection, the fields add up. Before-write
    /// hooks still get the whole payload, since they may change it.
    /// Hosts of earlier minor versions pass whole records (1.14).
    pub fn hooks_read(mut self, collection: &str, fields: &[&str]) -> Self {
        self.hook_fields
            .entry(collection.to_string())
            .or_default()
            .extend(fields.iter().map(|f| f.to_string()));
        self
    }

    /// Per collection, the only fields the item hooks read
    /// ([`Extension::hooks_read`]); collections not named get whole records.
    pub fn hook_fields(&self) -> &BTreeMap<String, BTreeSet<String>> {
        &self.hook_fields
    }

    /// Adds a schema migration. Ids are applied once each, in the order added.
    pub fn migration(mut self, id: &str, steps: Vec<Step>) -> Self {
        self.migrations.push((id.to_string(), steps));
        self
    }

    /// Registers routes.
    pub fn routes(mut self, register: impl FnOnce(&mut Router)) -> Self {
        register(&mut self.router);
        self
    }

    /// Registers a hook run **before** a write of `collections`, inside
    /// its transaction (SDK 1.9; Directus's `filter` hooks on
    /// `items.create`, `items.update` and `items.delete`);
    /// [`Collections::All`] for every collection. The host spends nothing
    /// on the writes of other collections. It runs after the writer's
    /// permission to touch the item is checked and before anything else:
    /// before the payload is checked against the collection and the
    /// writer's field rules, before the platform's reference rules, before
    /// the write, its in-transaction hooks and the commit.
    ///
    /// The hook may change [`PendingWrite::payload`] of a create or an
    /// update (the write then takes the changed one, checked as the
    /// writer's own), write through the [`Context`], whose services are
    /// bound to the writing transaction (deleting what refers to an item
    /// about to be deleted, say), or refuse the write by returning an
    /// error, mapped as for [`Extension::before_commit_in`]: the whole
    /// transaction rolls back, its own writes with it. Hooks run in
    /// registration order, extensions in load order, each seeing the
    /// payload as the previous one left it.
    pub fn before_write_in<H>(mut self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&mut PendingWrite, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.before_write.push(WriteHook {
            collections: collections.into().into_list(),
            run: Box::new(hook),
        });
        self
    }

    /// Registers a hook run on every write of `collections` **inside its
    /// transaction**, after the write and before the commit (SDK 1.5;
    /// Directus calls these "filter" hooks); [`Collections::All`] for
    /// every collection. The host spends nothing on the writes of other
    /// collections.
    ///
    /// The hook sees the same [`ItemEvent`] as
    /// [`Extension::after_commit_in`] hooks, with the write already
    /// applied, and a [`Context`] whose services are bound to the writing
    /// transaction: what it writes commits or rolls back with the write.
    /// Returning an error refuses the write: the whole transaction is
    /// rolled back and the writer gets the error (an
    /// [`ItemsError`](crate::ItemsError) keeps its code; an
    /// [`ApiError`](crate::ApiError) of status 400, 403 or 404 becomes
    /// `INVALID_PAYLOAD`, `FORBIDDEN` or `NOT_FOUND`; anything else is a
    /// `HOOK_FAILED` internal error). Keep these hooks short: the write
    /// holds the database's write lock while they run.
    pub fn before_commit_in<H>(mut self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&ItemEvent, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.before_commit.push(Hook {
            collections: collections.into().into_list(),
            run: HookFn::Parsed(Box::new(hook)),
        });
        self
    }

    /// [`Extension::before_commit_in`] with the event as the host's JSON
    /// text ([`RawItemEvent`]): for hooks on writes of large JSON
    /// documents, which read a few fields and should not build the
    /// documents into trees.
    pub fn before_commit_raw_in<H>(mut self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&RawItemEvent<'_>, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.before_commit.push(Hook {
            collections: collections.into().into_list(),
            run: HookFn::Raw(Box::new(hook)),
        });
        self
    }

    /// Registers a hook called with the item events of `collections` after
    /// their write committed (SDK 1.10; `on_event_in` before);
    /// [`Collections::All`] for every collection. The host spends nothing
    /// on the events of other collections. An error is logged; the write
    /// stands.
    pub fn after_commit_in<H>(mut self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&ItemEvent, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.hooks.push(Hook {
            collections: collections.into().into_list(),
            run: HookFn::Parsed(Box::new(hook)),
        });
        self
    }

    /// [`Extension::after_commit_in`] with the event as the host's JSON
    /// text ([`RawItemEvent`]): nothing is parsed into trees for this hook
    /// (SDK 1.10; `on_event_raw_in` before).
    pub fn after_commit_raw_in<H>(mut self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&RawItemEvent<'_>, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.hooks.push(Hook {
            collections: collections.into().into_list(),
            run: HookFn::Raw(Box::new(hook)),
        });
        self
    }

    /// Registers a hook called for every item event after its write
    /// committed.
    #[deprecated(
        since = "1.10.0",
        note = "use `after_commit_in(Collections::All, hook)`"
    )]
    pub fn on_event<H>(self, hook: H) -> Self
    where
        H: Fn(&ItemEvent, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.after_commit_in(Collections::All, hook)
    }

    /// [`Extension::after_commit_in`] under its earlier name.
    #[deprecated(since = "1.10.0", note = "use `after_commit_in`")]
    pub fn on_event_in<H>(self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&ItemEvent, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.after_commit_in(collections, hook)
    }

    /// [`Extension::after_commit_raw_in`] under its earlier name.
    #[deprecated(since = "1.10.0", note = "use `after_commit_raw_in`")]
    pub fn on_event_raw_in<H>(self, collections: impl Into<Collections>, hook: H) -> Self
    where
        H: Fn(&RawItemEvent<'_>, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.after_commit_raw_in(collections, hook)
    }

    /// [`Extension::before_commit_in`] on every collection.
    #[deprecated(
        since = "1.10.0",
        note = "use `before_commit_in(Collections::All, hook)`"
    )]
    pub fn before_commit<H>(self, hook: H) -> Self
    where
        H: Fn(&ItemEvent, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.before_commit_in(Collections::All, hook)
    }

    /// [`Extension::before_write_in`] on every collection.
    #[deprecated(
        since = "1.10.0",
        note = "use `before_write_in(Collections::All, hook)`"
    )]
    pub fn before_write<H>(self, hook: H) -> Self
    where
        H: Fn(&mut PendingWrite, &Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.before_write_in(Collections::All, hook)
    }

    /// The collections whose writes some before-write hook watches:
    /// `None` when one watches them all; empty when there are none.
    #[doc(hidden)]
    pub fn before_write_collections(&self) -> Option<Vec<String>> {
        interest(self.before_write.iter().map(|h| h.collections.as_ref()))
    }

    /// The collections whose events some after-commit hook wants: `None`
    /// when one wants them all; empty when there are no hooks.
    #[doc(hidden)]
    pub fn event_collections(&self) -> Option<Vec<String>> {
        interest(self.hooks.iter().map(|h| h.collections.as_ref()))
    }

    /// The collections whose writes some in-transaction hook watches:
    /// `None` when one watches them all; empty when there are none.
    #[doc(hidden)]
    pub fn before_commit_collections(&self) -> Option<Vec<String>> {
        interest(self.before_commit.iter().map(|h| h.collections.as_ref()))
    }

    /// Registers a background job, also runnable on demand by name.
    pub fn schedule<J>(mut self, name: &str, when: Schedule, job: J) -> Self
    where
        J: Fn(&Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.schedules.push(ScheduledJob {
            name: name.to_string(),
            when,
            job: Box::new(job),
        });
        self
    }

    /// Runs once at load, after migrations, with admin-capable services.
    pub fn on_init<J>(mut self, job: J) -> Self
    where
        J: Fn(&Context<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.init = Some(Box::new(job));
        self
    }

    /// The router (its routes, OpenAPI paths and body rules). To test
    /// handlers, mount the extension in `example_host::testkit::TestHost`:
    /// a real host in the test's process.
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// The migrations, in order.
    pub fn migrations(&self) -> &[(String, Vec<Step>)] {
        &self.migrations
    }
}
