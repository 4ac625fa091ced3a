//! The service's collections (docs/decisions.md §6, fields of
//! docs/service-api.md) as migrations.
//!
//! The extension never touches the database: it declares its collections and
//! seed data here and the host applies them once each, in order. Every
//! collection has an implicit `id` (UUID v4) and is never declared here; the
//! host fills `date_created`, `user_created` and `date_updated` itself.

use host_sdk::schema::{
    change_grant, collection_meta, field_meta, on_delete, one_to_many, Collection, CollectionMeta,
    Field, FieldMeta, Grant, GrantRule, Index, OnDelete, Step,
};
use serde_json::json;

use crate::achievements;

/// Id of the migration creating every collection.
pub const COLLECTIONS_MIGRATION: &str = "0001_collections";
/// Id of the migration seeding the achievements.
pub const SEED_ACHIEVEMENTS_MIGRATION: &str = "0002_seed_achievements";
/// Id of the migration adding the constant-cost scoring state.
pub const SCORING_MIGRATION: &str = "0003_scoring_state";
/// Id of the migration adding the per-owner recording index.
pub const OWNER_INDEX_MIGRATION: &str = "0004_recordings_by_owner";
/// Id of the migration adding the indexes that cover the analytics.
pub const ANALYTICS_INDEX_MIGRATION: &str = "0005_analytics_covering_indexes";

/// Id of the migration marking the stats rows the ledger wrote itself.
pub const VERIFIED_STATS_MIGRATION: &str = "0006_stats_ledger_verified";

/// Id of the migration declaring what deletes do to references.
pub const REFERENCE_RULES_MIGRATION: &str = "0007_reference_rules";

/// Id of the migration declaring the one-to-many aliases.
pub const ALIASES_MIGRATION: &str = "0008_aliases";

/// Id of the migration granting members their rules on recordings and likes.
pub const MEMBER_GRANTS_MIGRATION: &str = "0009_member_grants";
/// Id of the migration adding the fields the site's pages read.
pub const SITE_FIELDS_MIGRATION: &str = "0010_site_fields";
/// Id of the migration narrowing members' recording rules as an early
/// host seeded them.
pub const NARROWED_RULES_MIGRATION: &str = "0011_member_recordings_narrowed";
/// Id of the migration giving the collections and fields what clients
/// show of them (SDK 1.12).
pub const MODEL_META_MIGRATION: &str = "0012_model_meta";
/// Id of the migration indexing the leaderboard's order (SDK 1.13).
pub const LEADERBOARD_ORDER_MIGRATION: &str = "0013_leaderboard_order";
/// Id of the migration adding the flag that says a video's counters are
/// exact (see `counters`).
pub const EXACT_COUNTS_MIGRATION: &str = "0014_video_counts_exact";
/// The rank tree (see `gamification::ranks`).
pub const RANK_COUNTS_MIGRATION: &str = "0015_rank_counts";
/// The community list's position tree (see `community_positions`).
pub const COMMUNITY_COUNTS_MIGRATION: &str = "0016_community_counts";
/// Id of the migration indexing the leaderboard's order with every stats
/// value a page shows.
pub const LEADERBOARD_ROWS_MIGRATION: &str = "0017_leaderboard_rows";
/// Id of the migration indexing the video list's order.
pub const VIDEO_ORDER_MIGRATION: &str = "0018_video_list_order";
/// Id of the migration creating the analytics' sums per video and day.
pub const VIDEO_DAYS_MIGRATION: &str = "0019_video_days";
/// Id of the migration adding the copies of the shown user fields to the
/// stats rows.
pub const SHOWN_USERS_MIGRATION: &str = "0020_stats_shown_users";
/// Id of the migration dropping the indexes that later ones serve.
pub const SERVED_INDEXES_MIGRATION: &str = "0021_served_indexes_dropped";
/// Id of the migration indexing whether a video's counters are exact.
pub const EXACT_INDEX_MIGRATION: &str = "0022_counts_exact_index";
/// Id of the migration keeping the analytics' sums per creator and day,
/// and each video's whole sums on its header.
pub const CREATOR_DAYS_MIGRATION: &str = "0023_creator_days";
/// Id of the migration covering the links a page of videos reads.
pub const COVERED_LINKS_MIGRATION: &str = "0024_covered_video_links";
/// The users tied at 0, counted by user id (see `gamification::ties`).
pub const TIE_COUNTS_MIGRATION: &str = "0025_tie_counts";

/// Host-owned collections the service refers to.
const USERS: &str = "platform_users";
const FILES: &str = "platform_files";

/// A counter: never null, starts at 0.
fn counter(name: &str) -> Field {
    Field::integer(name).not_null().default(json!(0))
}

/// A flag that starts false.
fn flag(name: &str) -> Field {
    Field::boolean(name).default(json!(false))
}

/// The steps of [`COLLECTIONS_MIGRATION`], in dependency order (a collection
/// is created before any collection referring to it).
pub fn collections() -> Vec<Step> {
    vec![
        // Public content. `slug` is what the public detail routes match on.
        Collection::new("videos")
            .field(Field::string("slug").unique())
            .field(Field::string("title"))
            .field(Field::text("description"))
            .field(Field::reference("image", FILES))
            .field(Field::reference("movie", FILES))
            .field(Field::timestamp("upload_date"))
            .field(flag("featured"))
            .field(flag("premium"))
            .field(counter("likes_count"))
            .field(counter("plays_count"))
            .field(counter("views_count"))
            .index(&["upload_date"])
            .build(),
        // The many-to-many `videos.models` relation.
        Collection::new("videos_models")
            .field(Field::reference("videos_id", "videos"))
            .field(Field::reference("platform_users_id", USERS))
            .index(&["videos_id"])
            .index(&["platform_users_id"])
            .build(),
        // A model's `photos`, ordered by `sort`.
        Collection::new("model_photos")
            .field(Field::reference("platform_users_id", USERS))
            .field(Field::reference("platform_files_id", FILES))
            .field(Field::integer("sort"))
            .index(&["platform_users_id"])
            .build(),
        Collection::new("articles")
            .field(Field::string("slug"))
            .field(Field::string("title"))
            .field(Field::text("excerpt"))
            .field(Field::text("content"))
            .field(Field::reference("image", FILES))
            .field(Field::timestamp("publish_date"))
            .field(flag("featured"))
            .field(Field::reference("author", USERS))
            .field(Field::timestamp("date_created"))
            .index(&["publish_date"])
            .build(),
        // Video interaction. One like per user and video; the unique index
        // also serves lookups by video.
        Collection::new("video_likes")
            .field(Field::reference("video_id", "videos"))
            .field(Field::reference("user_id", USERS))
            .field(Field::timestamp("date_created"))
            .unique(&["video_id", "user_id"])
            .index(&["user_id"])
            .build(),
        Collection::new("video_plays")
            .field(Field::reference("video_id", "videos"))
            .field(Field::reference("user_id", USERS))
            .field(Field::string("session_id"))
            .field(Field::float("duration_watched").default(json!(0)))
            .field(flag("completed"))
            .field(Field::timestamp("date_created"))
            .index(&["video_id"])
            .build(),
        // Device-control recordings: the owner's list, and the community list.
        Collection::new("recordings")
            .field(Field::string("status").default(json!("draft")))
            .field(Field::reference("user_created", USERS))
            .field(Field::timestamp("date_created"))
            .field(Field::timestamp("date_updated"))
            .field(Field::string("title"))
            .field(Field::text("description"))
            .field(Field::string("slug"))
            .field(Field::float("duration"))
            .field(Field::json("events"))
            .field(Field::json("device_info"))
            .field(Field::json("tags").default(json!([])))
            .field(Field::reference("linked_video", "videos"))
            .field(flag("featured"))
            .field(flag("public"))
            .field(Field::reference("original_recording_id", "recordings"))
            .index(&["user_created", "date_created"])
            .index(&["status", "public", "date_created"])
            .build(),
        Collection::new("recording_plays")
            .field(Field::reference("user_id", USERS))
            .field(Field::reference("recording_id", "recordings"))
            .field(Field::float("duration_played").default(json!(0)))
            .field(flag("completed"))
            .field(Field::timestamp("date_created"))
            .field(Field::timestamp("date_updated"))
            .index(&["recording_id"])
            .index(&["user_id"])
            .build(),
        // Gamification.
        Collection::new("user_points")
            .field(Field::reference("user_id", USERS))
            .field(Field::string("action"))
            .field(counter("points"))
            .field(Field::reference("recording_id", "recordings"))
            .field(Field::timestamp("date_created"))
            .index(&["user_id", "date_created"])
            .build(),
        Collection::new("achievements")
            .field(Field::string("code").not_null().unique())
            .field(Field::string("name"))
            .field(Field::text("description"))
            .field(Field::string("icon"))
            .field(Field::string("category"))
            .field(counter("required_count"))
            .field(counter("points_reward"))
            .field(Field::string("status").default(json!(achievements::PUBLISHED)))
            .field(Field::integer("sort"))
            .build(),
        Collection::new("user_achievements")
            .field(Field::reference("user_id", USERS))
            .field(Field::reference("achievement_id", "achievements"))
            .field(counter("progress"))
            .field(Field::timestamp("date_unlocked"))
            .unique(&["user_id", "achievement_id"])
            .build(),
        Collection::new("user_stats")
            .field(Field::reference("user_id", USERS).unique())
            .field(counter("total_raw_points"))
            .field(
                Field::float("total_weighted_points")
                    .not_null()
                    .default(json!(0)),
            )
            .field(counter("recordings_count"))
            .field(counter("playbacks_count"))
            .field(counter("comments_count"))
            .field(counter("achievements_count"))
            .field(Field::timestamp("last_updated"))
            .index(&["total_weighted_points"])
            .build(),
    ]
}

/// The steps of [`SEED_ACHIEVEMENTS_MIGRATION`]: the 17 achievements.
pub fn seed_achievements() -> Vec<Step> {
    vec![Step::InsertItems {
        collection: "achievements".to_string(),
        items: achievements::seed_items(),
    }]
}

/// Every migration of the service, in the order the host must apply them.
/// The state of the decay-anchored scores (see `gamification::score`):
/// each user's anchored sum and completed plays next to the stats, indexed
/// for the leaderboard, and the anchor t₀ itself.
pub fn scoring_state() -> Vec<Step> {
    use crate::gamification::ledger::{DEFAULT_ANCHOR, STATE_ID};
    vec![
        Step::AddField {
            collection: "user_stats".into(),
            field: Field::float("decay_sum").not_null().default(json!(0)),
        },
        Step::AddField {
            collection: "user_stats".into(),
            field: counter("completions_count"),
        },
        Step::CreateIndex {
            collection: "user_stats".into(),
            index: Index {
                fields: vec!["decay_sum".into()],
                unique: false,
            },
        },
        Step::CreateIndex {
            collection: "user_points".into(),
            index: Index {
                fields: vec!["recording_id".into(), "action".into()],
                unique: false,
            },
        },
        Collection::new("gamification_state")
            .field(Field::timestamp("anchor").not_null())
            .build(),
        Step::InsertItems {
            collection: "gamification_state".into(),
            items: vec![json!({"id": STATE_ID, "anchor": DEFAULT_ANCHOR})],
        },
    ]
}

pub fn migrations() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (COLLECTIONS_MIGRATION, collections()),
        (SEED_ACHIEVEMENTS_MIGRATION, seed_achievements()),
        (SCORING_MIGRATION, scoring_state()),
        (OWNER_INDEX_MIGRATION, recordings_by_owner()),
        (ANALYTICS_INDEX_MIGRATION, analytics_covering_indexes()),
        (VERIFIED_STATS_MIGRATION, stats_ledger_verified()),
        (REFERENCE_RULES_MIGRATION, reference_rules()),
        (ALIASES_MIGRATION, aliases()),
        (MEMBER_GRANTS_MIGRATION, member_grants()),
        (SITE_FIELDS_MIGRATION, site_fields()),
        (NARROWED_RULES_MIGRATION, member_recordings_narrowed()),
        (MODEL_META_MIGRATION, model_meta()),
        (LEADERBOARD_ORDER_MIGRATION, leaderboard_order()),
        (EXACT_COUNTS_MIGRATION, video_counts_exact()),
        (RANK_COUNTS_MIGRATION, rank_counts()),
        (COMMUNITY_COUNTS_MIGRATION, community_counts()),
        (LEADERBOARD_ROWS_MIGRATION, leaderboard_rows()),
        (VIDEO_ORDER_MIGRATION, video_list_order()),
        (VIDEO_DAYS_MIGRATION, video_days()),
        (SHOWN_USERS_MIGRATION, stats_shown_users()),
        (SERVED_INDEXES_MIGRATION, served_indexes_dropped()),
        (EXACT_INDEX_MIGRATION, counts_exact_index()),
        (CREATOR_DAYS_MIGRATION, creator_days()),
        (COVERED_LINKS_MIGRATION, covered_video_links()),
        (TIE_COUNTS_MIGRATION, tie_counts()),
    ]
}

/// An index of `fields` that is not unique.
fn plain_index(fields: &[&str]) -> Index {
    Index {
        fields: fields.iter().map(|f| f.to_string()).collect(),
        unique: false,
    }
}

/// Indexes that a later index serves every read of (it leads with their
/// fields), dropped so that each write moves fewer entries (SDK 1.19's
/// `DropIndex`): an award moved a stats row's `decay_sum` in three
/// indexes (0003's, 0013's, and 0017's, which leads with the fields of
/// both), and a play was entered in two indexes leading with `video_id`
/// (the collection's own and the analytics' covering one, 0005). The
/// video list's order (0018) serves the date's own index.
pub fn served_indexes_dropped() -> Vec<Step> {
    let drop = |collection: &str, fields: &[&str]| Step::DropIndex {
        collection: collection.into(),
        index: plain_index(fields),
    };
    vec![
        drop("user_stats", &["decay_sum"]),
        drop("user_stats", &["-decay_sum", "user_id"]),
        drop("video_plays", &["video_id"]),
        drop("videos", &["upload_date"]),
    ]
}

/// A page of videos reads its videos' links (`videos_id` in the page, in
/// the links' order) for the users they name: an index holding all three
/// answers that from its entries alone, without a lookup of each link's
/// row (5% of a page's host time on SQLite). It leads with `videos_id`,
/// so the collection's own index of it is dropped.
pub fn covered_video_links() -> Vec<Step> {
    vec![
        Step::CreateIndex {
            collection: "videos_models".into(),
            index: plain_index(&["videos_id", "id", "platform_users_id"]),
        },
        Step::DropIndex {
            collection: "videos_models".into(),
            index: plain_index(&["videos_id"]),
        },
    ]
}

/// Whether a video's counters are exact, indexed: a page of the video
/// list asks whether any video's are not (`videos::list_as_read`) by
/// reading the index's first entry. The counters' hook writes the flag only
/// when it changes, so a play or a like moves no entry of it.
pub fn counts_exact_index() -> Vec<Step> {
    vec![Step::CreateIndex {
        collection: "videos".into(),
        index: plain_index(&[crate::counters::EXACT]),
    }]
}

/// A kept count tree's collection (a unique `node` and its counter), hidden,
/// and the flag on svc's state row that says it counts every row (not yet
/// on a database that has rows already: the first read that needs it
/// counts it).
fn kept_count_tree(
    nodes: &str,
    counter_name: &str,
    counted: &str,
    icon: &str,
    note: &str,
) -> Vec<Step> {
    vec![
        Collection::new(nodes)
            .field(Field::integer("node").not_null().unique())
            .field(counter(counter_name))
            .build(),
        collection_meta(
            nodes,
            CollectionMeta {
                icon: Some(icon.into()),
                note: Some(note.into()),
                hidden: Some(true),
                ..CollectionMeta::default()
            },
        ),
        Step::AddField {
            collection: "gamification_state".into(),
            field: flag(counted).not_null(),
        },
    ]
}

/// The rank tree (the first rank asked for counts it).
pub fn rank_counts() -> Vec<Step> {
    use crate::gamification::ranks::{COUNTED, COUNTS};
    kept_count_tree(
        COUNTS,
        "users",
        COUNTED,
        "leaderboard",
        "Users per leading bytes of their score: kept by the service for ranks",
    )
}

/// The community list's position tree (the first deep page asked for
/// counts it).
pub fn community_counts() -> Vec<Step> {
    use crate::community_positions::{COUNTED, COUNTS};
    kept_count_tree(
        COUNTS,
        "recordings",
        COUNTED,
        "format_list_numbered",
        "Community recordings per span of creation dates: kept by the service for deep pages",
    )
}

/// The tree of the users tied at 0 by user id (the first leaderboard page
/// asked for deep inside the tie counts it).
pub fn tie_counts() -> Vec<Step> {
    use crate::gamification::ties::{COUNTED, COUNTS};
    kept_count_tree(
        COUNTS,
        "users",
        COUNTED,
        "leaderboard",
        "Users without points per leading bytes of their id: kept by the service for deep leaderboard pages",
    )
}

/// Whether a video's counters equal its records' counts: false for every
/// video until the counters' hook has checked it (see `counters`).
pub fn video_counts_exact() -> Vec<Step> {
    vec![
        Step::AddField {
            collection: "videos".into(),
            field: flag(crate::counters::EXACT).not_null(),
        },
        field_meta(
            "videos",
            crate::counters::EXACT,
            FieldMeta {
                hidden: Some(true),
                readonly: Some(true),
                note: Some("Whether the like and play counters equal their records' counts".into()),
                ..FieldMeta::default()
            },
        ),
    ]
}

/// The leaderboard's order, `-decay_sum, user_id`, as one index: a page,
/// at any offset, is a walk of it instead of a sort of every user's stats
/// (the index on `decay_sum` alone still counts a rank's users above).
pub fn leaderboard_order() -> Vec<Step> {
    vec![Step::CreateIndex {
        collection: "user_stats".into(),
        index: Index {
            fields: vec!["-decay_sum".into(), "user_id".into()],
            unique: false,
        },
    }]
}

/// The leaderboard's order followed by every stats value a page shows
/// ([`crate::gamification::endpoints::PAGE_STATS`]): a page is then a walk
/// of this index alone, without fetching each row from the table (a
/// tenth of a page's work on SQLite). The order's own index (0013) stays
/// for databases it was made on; a walk picks this one.
pub fn leaderboard_rows() -> Vec<Step> {
    use crate::gamification::endpoints::PAGE_STATS;
    vec![Step::CreateIndex {
        collection: "user_stats".into(),
        index: Index {
            fields: PAGE_STATS.iter().map(|f| f.to_string()).collect(),
            unique: false,
        },
    }]
}

/// The public video list's order, ties by id
/// ([`crate::videos::LIST_ORDER`]): a page is a walk of this index from
/// the newest video shown, where the date's own index left every video of
/// the visible dates to sort for the tie-break.
pub fn video_list_order() -> Vec<Step> {
    vec![Step::CreateIndex {
        collection: "videos".into(),
        index: Index {
            fields: crate::videos::LIST_ORDER
                .iter()
                .map(|f| f.to_string())
                .collect(),
            unique: false,
        },
    }]
}

/// The analytics' sums per video and UTC day (`video_days`), kept by the
/// service; empty until a creator's analytics are first read (see
/// `video_days`). They go with their video.
pub fn video_days() -> Vec<Step> {
    use crate::video_days::{COMPLETE, DAYS};
    day_sums(
        DAYS,
        ("video_id", "videos"),
        vec![
            counter("plays"),
            counter("likes"),
            counter("completed"),
            Field::float("watch_sum").not_null().default(json!(0)),
            counter("watch_count"),
        ],
        COMPLETE,
        "Plays, likes and watch time per video and day: kept by the service for analytics",
    )
}

/// A collection of sums per owner (a video, a creator) and UTC day that
/// the service keeps, with its header's flag; hidden, and its rows go
/// with their owner.
fn day_sums(
    collection: &str,
    (owner, of): (&str, &str),
    sums: Vec<Field>,
    complete: &str,
    note: &str,
) -> Vec<Step> {
    let mut table = Collection::new(collection)
        .field(Field::reference(owner, of).not_null())
        .field(Field::string("day"));
    for sum in sums {
        table = table.field(sum);
    }
    let mut steps = vec![
        table
            .field(flag(complete).not_null())
            .unique(&[owner, "day"])
            .build(),
        collection_meta(
            collection,
            CollectionMeta {
                icon: Some("calendar_month".into()),
                note: Some(note.into()),
                hidden: Some(true),
                ..CollectionMeta::default()
            },
        ),
    ];
    steps.extend(on_delete(OnDelete::Cascade, &[(collection, owner)]));
    steps
}

/// The analytics' plays and likes per creator and UTC day
/// (`creator_days`), and on each video's header of `video_days` the flag
/// that says it sums the whole video (headers of an earlier release sum
/// its undated records only, so they start not kept) and its creators.
/// Kept by the service (see `creator_days`); a creator's rows go with
/// them.
pub fn creator_days() -> Vec<Step> {
    use crate::creator_days::{COMPLETE, DAYS};
    let mut steps = vec![
        Step::AddField {
            collection: crate::video_days::DAYS.into(),
            field: flag(crate::video_days::WHOLE).not_null(),
        },
        Step::AddField {
            collection: crate::video_days::DAYS.into(),
            field: Field::text(crate::video_days::CREATORS),
        },
    ];
    steps.extend(day_sums(
        DAYS,
        ("user_id", USERS),
        vec![counter("plays"), counter("likes")],
        COMPLETE,
        "Plays and likes of a creator's videos per day: kept by the service for analytics",
    ));
    steps
}

/// The fields of a user the leaderboard shows, copied onto the stats row
/// (`gamification::shown_users`): rows made before it start not copied.
pub fn stats_shown_users() -> Vec<Step> {
    use crate::gamification::shown_users::{COPIED, COPIES, STATS};
    // Kept by the service: read-only, out of the forms.
    let kept = |field: &str, note: String| {
        field_meta(
            STATS,
            field,
            FieldMeta {
                hidden: Some(true),
                readonly: Some(true),
                note: Some(note),
                ..FieldMeta::default()
            },
        )
    };
    let mut steps = Vec::new();
    for (copy, of) in COPIES {
        steps.push(Step::AddField {
            collection: STATS.into(),
            field: Field::string(copy),
        });
        steps.push(kept(
            copy,
            format!("The user's {of}, as the leaderboard shows it"),
        ));
    }
    steps.push(Step::AddField {
        collection: STATS.into(),
        field: flag(COPIED).not_null(),
    });
    steps.push(kept(
        COPIED,
        "Whether the copies of the user's fields are the user's".into(),
    ));
    steps
}

/// What clients (an admin app, a generic editor) show of the service's
/// collections and fields on `/collections` and `/fields`: icons, notes,
/// how an item is named, and the interfaces of the fields whose type says
/// too little (a recording's `events` is a timeline).
pub fn model_meta() -> Vec<Step> {
    let collection = |name: &str, icon: &str, note: &str, template: &str| {
        collection_meta(
            name,
            CollectionMeta {
                icon: Some(icon.into()),
                note: Some(note.into()),
                display_template: (!template.is_empty()).then(|| template.into()),
                ..CollectionMeta::default()
            },
        )
    };
    let interface = |collection: &str, field: &str, interface: &str, note: &str| {
        field_meta(
            collection,
            field,
            FieldMeta {
                interface: Some(interface.into()),
                note: (!note.is_empty()).then(|| note.into()),
                ..FieldMeta::default()
            },
        )
    };
    let choices = |values: &[&str]| json!({ "choices": values.iter().map(|v| json!({"text": v, "value": v})).collect::<Vec<_>>() });
    vec![
        collection(
            "videos",
            "movie",
            "The site's videos, with their models",
            "{{title}}",
        ),
        collection(
            "videos_models",
            "link",
            "Which models appear in which video",
            "",
        ),
        collection(
            "model_photos",
            "photo_library",
            "A model's photos, in order",
            "",
        ),
        collection("articles", "article", "The site's articles", "{{title}}"),
        collection("video_likes", "favorite", "Who liked which video", ""),
        collection("video_plays", "play_circle", "Plays of videos", ""),
        collection("recordings", "videocam", "Members' recordings", "{{title}}"),
        collection("recording_plays", "play_arrow", "Plays of recordings", ""),
        collection(
            "user_points",
            "stars",
            "Points earned, one row per action",
            "",
        ),
        collection(
            "achievements",
            "emoji_events",
            "What can be earned",
            "{{name}}",
        ),
        collection(
            "user_achievements",
            "military_tech",
            "Achievements earned",
            "",
        ),
        collection("user_stats", "leaderboard", "Each member's totals", ""),
        field_meta(
            "recordings",
            "events",
            FieldMeta {
                interface: Some("recording-timeline".into()),
                display: Some("formatted-json-value".into()),
                note: Some("The recorded events, in time order".into()),
                ..FieldMeta::default()
            },
        ),
        field_meta(
            "recordings",
            "status",
            FieldMeta {
                interface: Some("select-dropdown".into()),
                options: Some(choices(&["draft", "published", "archived"])),
                display: Some("labels".into()),
                width: Some("half".into()),
                ..FieldMeta::default()
            },
        ),
        interface(
            "recordings",
            "device_info",
            "input-code",
            "The recording device, as reported",
        ),
        interface("recordings", "tags", "tags", ""),
        interface(
            "recordings",
            "featured",
            "boolean",
            "Set by an administrator",
        ),
        interface("videos", "tags", "tags", ""),
        interface("articles", "tags", "tags", ""),
    ]
}

/// What the site's pages read besides docs/service-api.md's fields
/// (docs/decisions.md §9): tags on videos and articles, an article's category,
/// and on the platform's users (a host collection an extension may add to) the
/// date they joined and their website. Unset, each reads as `null`.
pub fn site_fields() -> Vec<Step> {
    let add = |collection: &str, field: Field| Step::AddField {
        collection: collection.into(),
        field,
    };
    vec![
        add("videos", Field::json("tags")),
        add("articles", Field::json("tags")),
        add("articles", Field::string("category")),
        add(USERS, Field::timestamp("join_date")),
        add(USERS, Field::string("website")),
    ]
}

/// The fields of a recording a member may write: all but `featured`, which
/// is an administrator's act (it earns RECORDING_FEATURED). The platform
/// sets `id`, `user_created` and the dates itself.
pub const MEMBER_RECORDING_FIELDS: [&str; 11] = [
    "status",
    "title",
    "description",
    "slug",
    "duration",
    "events",
    "device_info",
    "tags",
    "linked_video",
    "public",
    "original_recording_id",
];

/// What `Model` and `Viewer` may do with recordings and likes
/// (docs/decisions.md §5): read their own recordings and public ones (a private
/// recording is never readable by another member), create recordings as
/// themselves, update and delete their own, never write `featured`; read,
/// create and delete their own likes. On a database whose first start seeded
/// these rules already, each is kept as it is.
pub fn member_grants() -> Vec<Step> {
    let own = |field: &str| json!({ field: {"_eq": "$CURRENT_USER"} });
    let own_or_public = json!({"_or": [own("user_created"), {"public": {"_eq": true}}]});
    let mut steps = Vec::new();
    for policy in ["Model", "Viewer"] {
        steps.extend([
            Grant::new(policy, "recordings", "read").filter(own_or_public.clone()),
            Grant::new(policy, "recordings", "create")
                .fields(&MEMBER_RECORDING_FIELDS)
                .presets(json!({"user_created": "$CURRENT_USER"})),
            Grant::new(policy, "recordings", "update")
                .filter(own("user_created"))
                .fields(&MEMBER_RECORDING_FIELDS),
            Grant::new(policy, "recordings", "delete").filter(own("user_created")),
            Grant::new(policy, "video_likes", "read").filter(own("user_id")),
            Grant::new(policy, "video_likes", "create")
                .filter(own("user_id"))
                .presets(json!({"user_id": "$CURRENT_USER"})),
            Grant::new(policy, "video_likes", "delete").filter(own("user_id")),
        ]);
    }
    steps.into_iter().map(Step::from).collect()
}

/// Narrows members' recording rules still as the first hosts seeded them
/// (every recording readable, every field writable) to what
/// docs/decisions.md §5 says: their own and public recordings read, every
/// field but `featured` written. A rule an administrator changed since is
/// kept; rules granted by `0009_member_grants` are narrow already.
pub fn member_recordings_narrowed() -> Vec<Step> {
    let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
    let own_or_public = json!({"_or": [own.clone(), {"public": {"_eq": true}}]});
    let writable = GrantRule::all().fields(&MEMBER_RECORDING_FIELDS);
    let mut steps = Vec::new();
    for policy in ["Model", "Viewer"] {
        steps.extend([
            change_grant(
                policy,
                "recordings",
                "read",
                GrantRule::all(),
                GrantRule::all().filter(own_or_public.clone()),
            ),
            change_grant(
                policy,
                "recordings",
                "create",
                GrantRule::all(),
                writable.clone(),
            ),
            change_grant(
                policy,
                "recordings",
                "update",
                GrantRule::all().filter(own.clone()),
                writable.clone().filter(own.clone()),
            ),
        ]);
    }
    steps
}

/// The lists a front end reads through `/items` as Directus models them:
/// a video's models (`fields=models.platform_users_id.*`, over the
/// `videos_models` junction), and a model's videos and photos.
pub fn aliases() -> Vec<Step> {
    vec![
        one_to_many("videos", "models", "videos_models", "videos_id"),
        one_to_many(USERS, "videos", "videos_models", "platform_users_id"),
        one_to_many(USERS, "photos", "model_photos", "platform_users_id"),
    ]
}

/// What deleting an item does to the service's records that refer to it.
/// Records that only exist for their target go with it (a video's likes,
/// plays and model links; a model's photos; a user's likes, points,
/// achievements and stats; a recording's plays); the others keep their
/// history and lose the link (set null, the default of every reference not
/// listed: a video's files, an article's author, a recording's owner or
/// linked video, a play's player, a point action's recording).
pub fn reference_rules() -> Vec<Step> {
    on_delete(
        OnDelete::Cascade,
        &[
            ("videos_models", "videos_id"),
            ("videos_models", "platform_users_id"),
            ("model_photos", "platform_users_id"),
            ("model_photos", "platform_files_id"),
            ("video_likes", "video_id"),
            ("video_likes", "user_id"),
            ("video_plays", "video_id"),
            ("recording_plays", "recording_id"),
            ("user_points", "user_id"),
            ("user_achievements", "user_id"),
            ("user_achievements", "achievement_id"),
            ("user_stats", "user_id"),
        ],
    )
}

/// Whether a stats row is as the ledger last wrote it (see
/// `gamification::ledger::VERIFIED`). Rows of an existing database start
/// unverified, so each user's next award recomputes theirs from scratch
/// once: rows kept before every write path was followed may be off.
pub fn stats_ledger_verified() -> Vec<Step> {
    use crate::gamification::ledger::VERIFIED;
    vec![Step::AddField {
        collection: "user_stats".into(),
        field: flag(VERIFIED),
    }]
}

/// `GET /analytics` aggregates every play and like of the caller's videos
/// (per day, per video, completed ones, mean watch time). These indexes
/// hold every column it reads, so SQLite answers from the index entries of
/// those videos alone, side by side, instead of fetching each row from a
/// table that grows with the whole site.
pub fn analytics_covering_indexes() -> Vec<Step> {
    let index = |collection: &str, fields: &[&str]| Step::CreateIndex {
        collection: collection.into(),
        index: plain_index(fields),
    };
    vec![
        index(
            "video_plays",
            &["video_id", "date_created", "completed", "duration_watched"],
        ),
        index("video_likes", &["video_id", "date_created"]),
    ]
}

/// The `recordings` check counts an owner's featured published recordings
/// on every publication (the published ones are a counter of the stats
/// row); this index answers that count without reading the recordings
/// themselves, whose events make rows large.
pub fn recordings_by_owner() -> Vec<Step> {
    vec![Step::CreateIndex {
        collection: "recordings".into(),
        index: Index {
            fields: vec!["user_created".into(), "status".into(), "featured".into()],
            unique: false,
        },
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_sdk::schema::{FieldType, Index};
    use serde_json::Value;

    fn find<'a>(steps: &'a [Step], name: &str) -> (&'a [Field], &'a [Index]) {
        steps
            .iter()
            .find_map(|s| match s {
                Step::CreateCollection {
                    collection,
                    fields,
                    indexes,
                } if collection == name => Some((fields.as_slice(), indexes.as_slice())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("collection {name} is created"))
    }

    fn field<'a>(steps: &'a [Step], collection: &str, name: &str) -> &'a Field {
        find(steps, collection)
            .0
            .iter()
            .find(|f| f.field == name)
            .unwrap_or_else(|| panic!("{collection}.{name} is declared"))
    }

    fn has_index(steps: &[Step], collection: &str, fields: &[&str], unique: bool) -> bool {
        find(steps, collection)
            .1
            .iter()
            .any(|i| i.unique == unique && i.fields == fields)
    }

    const EXPECTED: [&str; 12] = [
        "videos",
        "videos_models",
        "model_photos",
        "articles",
        "video_likes",
        "video_plays",
        "recordings",
        "recording_plays",
        "user_points",
        "achievements",
        "user_achievements",
        "user_stats",
    ];

    /// Hosts upgrade one at a time (docs/extensions.md "Migrations"): a
    /// release's migrations only add, so the previous release's svc keeps
    /// serving while this one migrates.
    #[test]
    fn the_migrations_only_add() {
        assert_eq!(
            example_host::testkit::not_additive(crate::ID, &migrations(), &[]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn creates_every_service_collection_once_and_serializes() {
        let steps = collections();
        let text = serde_json::to_string(&steps).expect("steps serialize");
        let json: Value = serde_json::from_str(&text).unwrap();
        let created: Vec<&str> = json
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["op"] == "create_collection")
            .map(|s| s["collection"].as_str().unwrap())
            .collect();
        assert_eq!(created, EXPECTED);
        // And the JSON reads back as the same steps.
        let back: Vec<Step> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, steps);
    }

    #[test]
    fn id_is_never_declared_and_references_point_backwards() {
        let steps = collections();
        let mut seen: Vec<&str> = vec![USERS, FILES];
        for step in &steps {
            let Step::CreateCollection {
                collection, fields, ..
            } = step
            else {
                panic!("only collections in 0001");
            };
            // A self-reference is allowed (recordings.original_recording_id).
            seen.push(collection);
            for f in fields {
                assert_ne!(f.field, "id", "{collection} declares id");
                if let Some(target) = &f.references {
                    assert!(
                        seen.contains(&target.as_str()),
                        "{collection}.{} refers to {target}, created later",
                        f.field
                    );
                    assert_eq!(f.kind, FieldType::Uuid);
                }
            }
        }
    }

    #[test]
    fn defaults_and_types_follow_the_spec() {
        let s = collections();
        for (c, f) in [
            ("videos", "likes_count"),
            ("videos", "plays_count"),
            ("videos", "views_count"),
            ("user_stats", "recordings_count"),
            ("user_stats", "achievements_count"),
            ("user_achievements", "progress"),
        ] {
            let f = field(&s, c, f);
            assert_eq!(f.kind, FieldType::Integer, "{c}.{}", f.field);
            assert!(!f.nullable, "{c}.{}", f.field);
            assert_eq!(f.default, Some(json!(0)), "{c}.{}", f.field);
        }
        let status = field(&s, "recordings", "status");
        assert_eq!(status.default, Some(json!("draft")));
        let tags = field(&s, "recordings", "tags");
        assert_eq!(
            (tags.kind, tags.default.clone()),
            (FieldType::Json, Some(json!([])))
        );
        assert_eq!(
            field(&s, "recordings", "public").default,
            Some(json!(false))
        );
        assert_eq!(
            field(&s, "recordings", "featured").default,
            Some(json!(false))
        );
        assert_eq!(field(&s, "recordings", "duration").kind, FieldType::Float);
        assert_eq!(
            field(&s, "recordings", "date_updated").kind,
            FieldType::Timestamp
        );
        let played = field(&s, "recording_plays", "duration_played");
        assert_eq!(
            (played.kind, played.default.clone()),
            (FieldType::Float, Some(json!(0)))
        );
        assert_eq!(
            field(&s, "recording_plays", "completed").default,
            Some(json!(false))
        );
        assert_eq!(
            field(&s, "achievements", "status").default,
            Some(json!("published"))
        );
        for (c, f) in [
            ("videos", "upload_date"),
            ("articles", "publish_date"),
            ("user_achievements", "date_unlocked"),
            ("user_stats", "last_updated"),
            ("user_points", "date_created"),
        ] {
            assert_eq!(field(&s, c, f).kind, FieldType::Timestamp, "{c}.{f}");
        }
        assert_eq!(
            field(&s, "videos", "movie").references.as_deref(),
            Some("platform_files")
        );
        assert_eq!(
            field(&s, "recordings", "original_recording_id")
                .references
                .as_deref(),
            Some("recordings")
        );
        assert_eq!(
            field(&s, "user_achievements", "achievement_id")
                .references
                .as_deref(),
            Some("achievements")
        );
    }

    #[test]
    fn unique_constraints() {
        let s = collections();
        assert!(field(&s, "videos", "slug").unique);
        assert!(field(&s, "user_stats", "user_id").unique);
        assert!(field(&s, "achievements", "code").unique);
        assert!(has_index(&s, "video_likes", &["video_id", "user_id"], true));
        assert!(has_index(
            &s,
            "user_achievements",
            &["user_id", "achievement_id"],
            true
        ));
        // Not everything is unique: a user may play a video many times.
        assert!(!field(&s, "video_plays", "user_id").unique);
    }

    #[test]
    fn indexes_for_the_spec_queries() {
        let kept = indexes_after_every_migration();
        for (c, fields) in [
            ("videos", &["upload_date"][..]),
            ("videos", &["-upload_date", "-id"]),
            ("videos_models", &["videos_id"]),
            ("videos_models", &["platform_users_id"]),
            ("model_photos", &["platform_users_id"]),
            ("articles", &["publish_date"]),
            ("video_likes", &["user_id"]),
            ("video_plays", &["video_id"]),
            ("recordings", &["user_created", "date_created"]),
            ("recordings", &["status", "public", "date_created"]),
            ("recording_plays", &["recording_id"]),
            ("recording_plays", &["user_id"]),
            ("user_points", &["user_id", "date_created"]),
            ("user_stats", &["total_weighted_points"]),
            ("user_stats", &["-decay_sum", "user_id"]),
        ] {
            assert!(served(&kept, c, fields), "{c} {fields:?}");
        }
    }

    /// Every index of the collections as the migrations leave them, in
    /// order: each dropped one was there.
    fn indexes_after_every_migration() -> Vec<(String, Index)> {
        let mut kept: Vec<(String, Index)> = Vec::new();
        for (id, steps) in migrations() {
            for step in steps {
                match step {
                    Step::CreateCollection {
                        collection,
                        fields,
                        indexes,
                    } => {
                        kept.extend(indexes.into_iter().map(|i| (collection.clone(), i)));
                        kept.extend(fields.iter().filter(|f| f.unique).map(|f| {
                            let index = Index {
                                fields: vec![f.field.clone()],
                                unique: true,
                            };
                            (collection.clone(), index)
                        }));
                    }
                    Step::CreateIndex { collection, index } => kept.push((collection, index)),
                    Step::DropIndex { collection, index } => {
                        let at = kept
                            .iter()
                            .position(|(c, i)| *c == collection && *i == index);
                        let at = at.unwrap_or_else(|| panic!("{id} drops {index:?}: never made"));
                        kept.remove(at);
                    }
                    _ => {}
                }
            }
        }
        kept
    }

    /// Whether an index of `kept` on `collection` serves reads by `fields`:
    /// it leads with them, all in the same directions or all reversed (a
    /// walk backwards).
    fn served(kept: &[(String, Index)], collection: &str, fields: &[&str]) -> bool {
        let flip = |f: &str| match f.strip_prefix('-') {
            Some(name) => name.to_string(),
            None => format!("-{f}"),
        };
        kept.iter().filter(|(c, _)| c == collection).any(|(_, i)| {
            let lead = i.fields.iter().take(fields.len());
            i.fields.len() >= fields.len()
                && (lead.clone().zip(fields).all(|(a, b)| a == b)
                    || lead.zip(fields).all(|(a, b)| *a == flip(b)))
        })
    }

    /// A dropped index, in any migration, is a plain one that a kept index
    /// serves.
    #[test]
    fn every_dropped_index_is_served_by_a_kept_one() {
        let kept = indexes_after_every_migration();
        let drops = migrations().into_iter().flat_map(|(_, steps)| steps);
        let mut checked = 0;
        for step in drops {
            let Step::DropIndex { collection, index } = step else {
                continue;
            };
            checked += 1;
            assert!(!index.unique, "{index:?}");
            assert!(!kept.iter().any(|(c, i)| *c == collection && *i == index));
            let fields: Vec<&str> = index.fields.iter().map(String::as_str).collect();
            assert!(
                served(&kept, &collection, &fields),
                "{collection} {fields:?}"
            );
        }
        assert_eq!(checked, 5, "0021's four drops and 0024's one");
    }

    #[test]
    fn seed_inserts_the_achievements() {
        let steps = seed_achievements();
        assert_eq!(steps.len(), 1);
        let json = serde_json::to_value(&steps[0]).unwrap();
        assert_eq!(json["op"], "insert_items");
        assert_eq!(json["collection"], "achievements");
        let items = json["items"].as_array().unwrap();
        assert_eq!(items.len(), 17);
        // Every seeded field exists in the collection.
        let s = collections();
        for key in items[0].as_object().unwrap().keys() {
            field(&s, "achievements", key);
        }
    }

    #[test]
    fn every_alias_lists_a_reference_back_to_its_collection() {
        let s = collections();
        let aliases = aliases();
        assert_eq!(aliases.len(), 3);
        for step in aliases {
            let Step::CreateAlias {
                collection,
                related,
                field: key,
                ..
            } = step
            else {
                panic!("not an alias: {step:?}");
            };
            assert_eq!(
                field(&s, &related, &key).references.as_deref(),
                Some(collection.as_str()),
                "{related}.{key}"
            );
        }
    }

    #[test]
    fn migrations_are_ordered() {
        let ids: Vec<&str> = migrations().iter().map(|(id, _)| *id).collect();
        assert_eq!(
            ids,
            [
                "0001_collections",
                "0002_seed_achievements",
                "0003_scoring_state",
                "0004_recordings_by_owner",
                "0005_analytics_covering_indexes",
                "0006_stats_ledger_verified",
                "0007_reference_rules",
                "0008_aliases",
                "0009_member_grants",
                "0010_site_fields",
                "0011_member_recordings_narrowed",
                "0012_model_meta",
                "0013_leaderboard_order",
                "0014_video_counts_exact",
                "0015_rank_counts",
                "0016_community_counts",
                "0017_leaderboard_rows",
                "0018_video_list_order",
                "0019_video_days",
                "0020_stats_shown_users",
                "0021_served_indexes_dropped",
                "0022_counts_exact_index",
                "0023_creator_days",
                "0024_covered_video_links",
                "0025_tie_counts"
            ]
        );
    }
}
