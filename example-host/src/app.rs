//! The host process: open the database, seed it, mount the extensions,
//! then serve HTTP or run one schedule.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use crate::config::{Cli, Command, MigrateAction, ScheduleAction, ServeArgs};
use crate::extensions::Registry;
use crate::permissions::MigrationGrants;
use crate::platform::Platform;
use crate::settings::Env;
use crate::{
    bootstrap, demo, extensions, files, http, logging, mail, memory, platform_schema, signin,
    throttle,
};
use platform_store::storage;
use platform_store::storage::Store;

/// A started platform with its extensions mounted.
struct Started {
    platform: Arc<Platform>,
    registry: Arc<Registry>,
    /// With `EXTENSIONS_AUTO_RELOAD`: where the libraries were copied to.
    staging: Option<extensions::reload::Staging>,
}

/// Opens the database, applies the platform's migrations, seeds a new
/// platform, and loads the extensions.
fn start(cli: &Cli) -> Result<Started, String> {
    let location = cli.common.location()?;
    let store = storage::open(&location, cli.common.db_pool_max)
        .map_err(|e| format!("cannot open database {location}: {e}"))?;
    let mut admin = bootstrap::AdminSeed::from_env(&Env::process());
    if cli.serve.demo && admin.token.is_none() {
        admin.token = Some(demo::ADMIN_TOKEN.into());
    }
    // The demo's administrator signs in to the admin app as every demo user does.
    if cli.serve.demo && admin.password.is_none() {
        admin.password = Some(demo::DEMO_PASSWORD.into());
    }
    let platform = open_platform(store, admin, cli.common.relational_limits())?;
    let dir = cli.common.extensions_dir();
    log::info!("loading extensions from {}", dir.display());
    let staging = cli
        .serve
        .extensions_auto_reload
        .then(extensions::reload::Staging::new)
        .transpose()
        .map_err(|e| format!("cannot make a folder for reloaded extensions: {e}"))?;
    let registry = Registry::load_dir(&dir, &platform, staging.as_ref());
    #[cfg(feature = "inprocess")]
    if cli.common.builtin_svc {
        registry
            .add_builtin_svc(&platform)
            .map_err(|e| format!("cannot mount the linked svc extension: {e}"))?;
    }
    let (platform, registry) = mount(platform, registry, cli.serve.cache);
    Ok(Started {
        platform,
        registry,
        staging,
    })
}

/// `migrate status` and `migrate --dry-run`: the platform's and every
/// library's migrations against the database, owner by owner, opened
/// without running any (a library that cannot be opened is named); with
/// `dry_run`, the steps of each pending one. Writes nothing but the
/// bookkeeping tables of a new database.
fn show_migrations(cli: &Cli, dry_run: bool) -> Result<(), String> {
    use crate::migration_plan::OwnerPlan;
    let location = cli.common.location()?;
    let store = storage::open(&location, cli.common.db_pool_max)
        .map_err(|e| format!("cannot open database {location}: {e}"))?;
    let recorded = store.recorded_migrations();
    let mut owners = vec![(
        OwnerPlan::of(
            platform_schema::OWNER,
            &platform_schema::migration_ids(),
            platform_schema::ONCE_STEPS,
            &recorded,
        ),
        platform_schema::migrations()
            .into_iter()
            .map(|(id, steps)| (id.to_string(), steps))
            .collect::<Vec<_>>(),
    )];
    let dir = cli.common.extensions_dir();
    for path in extensions::loader::libraries_in(&dir) {
        let opened =
            extensions::loader::open(&path).and_then(|opened| Ok((opened.migrations()?, opened)));
        match opened {
            Ok((migrations, opened)) => {
                let declared: Vec<&str> = migrations.iter().map(|(id, _)| id.as_str()).collect();
                owners.push((
                    OwnerPlan::of_extension(&opened.id, &declared, &recorded),
                    migrations,
                ));
            }
            Err(e) => println!("{}: cannot be opened: {e}", path.display()),
        }
    }
    for (plan, migrations) in &owners {
        for line in plan.lines() {
            println!("{line}");
        }
        if dry_run {
            for (id, steps) in migrations
                .iter()
                .filter(|(id, _)| plan.pending.contains(id))
            {
                println!("would apply {}/{id}:", plan.owner);
                for step in steps {
                    println!("  {}", serde_json::to_string(step).unwrap_or_default());
                }
            }
        }
    }
    let pending: usize = owners.iter().map(|(plan, _)| plan.pending.len()).sum();
    println!("{pending} pending migration(s) in {location}");
    for (plan, _) in &owners {
        plan.refuse_newer()?;
    }
    Ok(())
}

/// The platform on an opened database: its migrations applied, seeded on
/// first start, old rules brought up to date.
pub(crate) fn open_platform(
    store: Arc<dyn Store>,
    admin: bootstrap::AdminSeed,
    relational_limits: platform_store::query::RelationalLimits,
) -> Result<Arc<Platform>, String> {
    crate::migration_plan::OwnerPlan::of(
        platform_schema::OWNER,
        &platform_schema::migration_ids(),
        platform_schema::ONCE_STEPS,
        &store.recorded_migrations(),
    )
    .refuse_newer()?;
    for (id, steps) in platform_schema::migrations() {
        if store
            .migrate(platform_schema::OWNER, id, &steps, &MigrationGrants)
            .map_err(|e| format!("platform migration {id} failed: {e}"))?
        {
            log::info!("applied platform migration {id}");
        }
    }
    store
        .track_changes(&platform_schema::access_collections())
        .map_err(|e| format!("cannot track changes of access: {e}"))?;
    let mut platform = Platform::new(store);
    signin::register_rules(&mut platform);
    platform.relational_limits = relational_limits;
    let platform = Arc::new(platform);
    bootstrap::first_start(&platform, admin)
        .map_err(|e| format!("first-start seeding failed: {e}"))?;
    bootstrap::grant_members_own_role(&platform)
        .map_err(|e| format!("granting members their own role failed: {e}"))?;
    bootstrap::lower_case_emails(&platform)
        .map_err(|e| format!("lower-casing the stored emails failed: {e}"))?;
    bootstrap::grant_members_own_access(&platform)
        .map_err(|e| format!("granting members their own access rows failed: {e}"))?;
    bootstrap::grant_member_files(&platform)
        .map_err(|e| format!("granting members their rules on files failed: {e}"))?;
    Ok(platform)
}

/// Puts the mounted extensions to work: caches keyed on the data version
/// (when `cache` is on) and item events delivered to their hooks.
pub(crate) fn mount(
    platform: Arc<Platform>,
    registry: Registry,
    cache: bool,
) -> (Arc<Platform>, Arc<Registry>) {
    if cache {
        registry.attach_runtime(&platform.store);
    }
    let registry = Arc::new(registry);
    platform.set_event_sink(registry.clone());
    (platform, registry)
}

/// The host's command line: serve (the default) or run one schedule.
pub fn run() -> ExitCode {
    memory::tune_allocator();
    extensions::loader::reserve_host_segments(http::routes::first_segments());
    let cli = Cli::parse();
    logging::init(&Env::process());
    if let Some(Command::Settings) = &cli.command {
        print!("{}", crate::settings_table::markdown());
        return ExitCode::SUCCESS;
    }
    if let Some(Command::NewExtension { name, dir }) = &cli.command {
        return match crate::scaffold::new_extension(name, dir, &crate::scaffold::checkout()) {
            Ok(made) => {
                println!(
                    "wrote {}: `cargo test` there runs its test; `cargo build` makes the library to serve (see its README.md)",
                    made.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                log::error!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(command @ (Command::Backup { .. } | Command::Restore { .. })) = &cli.command {
        return match backup_or_restore(&cli, command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                log::error!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Command::Migrate {
        dry_run,
        action: maybe_status,
    }) = &cli.command
    {
        if *dry_run || matches!(maybe_status, Some(MigrateAction::Status)) {
            return match show_migrations(&cli, *dry_run) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    log::error!("{e}");
                    ExitCode::FAILURE
                }
            };
        }
    }
    memory::start_trimming();
    let Started {
        platform,
        registry,
        staging,
    } = match start(&cli) {
        Ok(started) => started,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match &cli.command {
        Some(Command::Schedule {
            action: ScheduleAction::Run { extension, name },
        }) => {
            let started = std::time::Instant::now();
            match registry.run_schedule(&platform, extension, name) {
                Ok(()) => {
                    log::info!(
                        "[{extension}] schedule `{name}` finished in {:.1?}",
                        started.elapsed()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    log::error!("schedule `{name}` of `{extension}` failed: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Serve) | None => serve(&cli, platform, registry, staging),
        // Applied by the start: every migration of the platform and of the
        // libraries that mounted.
        Some(Command::Migrate { .. }) => {
            log::info!(
                "migrations applied: the platform and {} extension(s) are up to date",
                registry.all().len()
            );
            ExitCode::SUCCESS
        }
        // Handled before anything was opened.
        Some(
            Command::NewExtension { .. }
            | Command::Settings
            | Command::Backup { .. }
            | Command::Restore { .. },
        ) => ExitCode::SUCCESS,
    }
}

/// `backup` and `restore`: the database copied, no platform opened.
fn backup_or_restore(cli: &Cli, command: &Command) -> Result<(), String> {
    let location = cli.common.location()?;
    match command {
        Command::Backup {
            to,
            force,
            step_pages,
        } => crate::backups::backup(&location, to, *force, *step_pages),
        Command::Restore { from, force } => crate::backups::restore(&location, from, *force),
        other => Err(format!("not a backup or restore: {other:?}")),
    }
}

fn serve(
    cli: &Cli,
    platform: Arc<Platform>,
    registry: Arc<Registry>,
    staging: Option<extensions::reload::Staging>,
) -> ExitCode {
    let addr: SocketAddr = match format!("{}:{}", cli.serve.host, cli.serve.port).parse() {
        Ok(a) => a,
        Err(e) => {
            log::error!(
                "invalid listen address {}:{}: {e}",
                cli.serve.host,
                cli.serve.port
            );
            return ExitCode::FAILURE;
        }
    };
    let files_root = match cli.common.location() {
        Ok(database) => files::default_root(&database),
        Err(e) => {
            log::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let state = match app_state(&cli.serve, &platform, &registry, &files_root) {
        Ok(state) => state,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // After the storage is set up: the demo's files are stored there.
    if cli.serve.demo {
        if let Err(e) = demo::seed(&platform, &state.files, runtime.handle(), &cli.serve) {
            log::error!("demo seeding failed: {e}");
            return ExitCode::FAILURE;
        }
    }
    let reloader = staging.map(|staging| extensions::reload::Reloader {
        dir: cli.common.extensions_dir(),
        staging,
        registry,
        platform,
        cache: cli.serve.cache,
    });
    let schedules = Schedules::of(&cli.serve);
    let result = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        log::info!("listening on http://{}", listener.local_addr()?);
        serve_on(
            listener,
            state,
            schedules,
            reloader,
            http::shutdown_signal(),
        )
        .await;
        Ok::<(), std::io::Error>(())
    });
    // Extension calls that outlived their timeout may still be running on
    // blocking threads: give them a moment, then stop without them rather
    // than wait forever.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => {
            log::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("server failed on {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The HTTP side of a serving host around its platform, from its settings
/// (the environment and the `serve` options): mail, sign-in, throttles,
/// file storage (under `files_root` unless `STORAGE_*` says otherwise) and
/// the limits of requests.
pub(crate) fn app_state(
    serve: &ServeArgs,
    platform: &Arc<Platform>,
    registry: &Arc<Registry>,
    files_root: &std::path::Path,
) -> Result<http::AppState, String> {
    let env = Env::process();
    let mailer = mail::Settings::from_env(&env)
        .map(mail::Mailer::start)
        .map_err(|e| format!("cannot set mail up: {e}"))?;
    let signin = signin::settings::Settings::from_env(&env)
        .and_then(|settings| signin::SignIn::start(platform, settings, mailer))
        .map_err(|e| format!("cannot set sign-in up: {e}"))?;
    let throttle = throttle::settings::Settings::from_env(&env)
        .map(|settings| throttle::Throttle::new(&settings, &platform.store))
        .map_err(|e| format!("cannot set throttling up: {e}"))?;
    let files = files::Files::from_env(&env, files_root)
        .map_err(|e| format!("cannot set file storage up: {e}"))?;
    log::info!(
        "files kept in storage locations {:?}",
        files.storage.names().collect::<Vec<_>>()
    );
    Ok(http::AppState {
        platform: platform.clone(),
        registry: registry.clone(),
        signin: Arc::new(signin),
        unauthenticated: Arc::new(http::UnauthenticatedBodies::new(
            serve.anonymous_max_payload,
            serve.anonymous_payload_budget,
        )),
        throttle: Arc::new(throttle),
        files: Arc::new(files),
        limits: http::Limits {
            max_payload: serve.max_payload,
            max_batch_mutation: usize::try_from(serve.max_batch_mutation).unwrap_or(usize::MAX),
            extension_timeout: std::time::Duration::from_millis(serve.extension_timeout_ms.max(1)),
            header_timeout: std::time::Duration::from_millis(serve.header_timeout_ms.max(1)),
            body_timeout: std::time::Duration::from_millis(serve.body_timeout_ms.max(1)),
        },
    })
}

/// How a serving host takes part in the extensions' schedules.
pub(crate) struct Schedules {
    /// Whether it runs them at all (`--schedules`).
    pub enabled: bool,
    /// How long its claim on a period holds unless renewed.
    pub lease: std::time::Duration,
}

impl Schedules {
    pub fn of(settings: &ServeArgs) -> Self {
        Self {
            enabled: settings.schedules,
            lease: std::time::Duration::from_secs(settings.schedule_lease_secs),
        }
    }
}

/// Serves `state` on `listener` until `stop` completes, with the
/// extensions' schedules running beside it unless they are off (one run
/// per period across hosts) and, when given, hot reload watching the
/// extensions' folder. Runs inside a Tokio runtime.
pub(crate) async fn serve_on(
    listener: tokio::net::TcpListener,
    state: http::AppState,
    schedules: Schedules,
    reloader: Option<extensions::reload::Reloader>,
    stop: impl std::future::Future<Output = ()>,
) {
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let scheduler = extensions::schedules::Scheduler {
        registry: state.registry.clone(),
        platform: state.platform.clone(),
        claims: Arc::new(extensions::Claims::new(schedules.lease)),
        shutdown: shutdown_rx.clone(),
        enabled: schedules.enabled,
    };
    scheduler.spawn_all();
    if let Some(reloader) = reloader {
        reloader.spawn(scheduler, tokio::runtime::Handle::current(), shutdown_rx);
    }
    http::serve_connections(listener, state, stop, shutdown_tx).await
}
