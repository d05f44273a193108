"""Condition reasons: single CamelCase words that programs match on. Every reason a controller sets is
listed here under the condition it explains, and documented (docs/status.md, docs/troubleshooting.md;
a test keeps the docs complete)."""

from __future__ import annotations

from federator_contract import appstatus

# Ready=True
RUNNING = "Running"

# Reconciling=True: progress without anyone's help.
SPARK_APPLICATION_PENDING = "SparkApplicationPending"
SPARK_APPLICATION_RESTARTING = "SparkApplicationRestarting"
SPARK_APPLICATION_STOPPED = "SparkApplicationStopped"
SPARK_APPLICATION_STATE_UNKNOWN = "SparkApplicationStateUnknown"
# Local mode: the app retries an endpoint it cannot reach (in a cluster: federator_endpoint_unavailable).
SOURCE_UNAVAILABLE = appstatus.SOURCE_UNAVAILABLE
TARGET_UNAVAILABLE = appstatus.TARGET_UNAVAILABLE

# Stalled=True: nothing changes until a human acts.
INVALID_SPEC = "InvalidSpec"
EMULATOR_ONLY_IN_LOCAL_MODE = "EmulatorOnlyInLocalMode"
FAILOVER_GROUP_FOLLOWING_NOT_AVAILABLE = "FailoverGroupFollowingNotAvailable"
SECRET_NOT_FOUND = "SecretNotFound"
SECRET_KEY_NOT_FOUND = "SecretKeyNotFound"
LAUNCHER_NOT_INSTALLED = "LauncherNotInstalled"
SPARK_APPLICATION_FAILED = "SparkApplicationFailed"
CONFIG_MAP_NOT_FOUND = "ConfigMapNotFound"  # a ConfigMap (or its key) an editor reads
# Workload identity: the pods' service account is missing, or not annotated with the connections' identity.
SERVICE_ACCOUNT_NOT_FOUND = "ServiceAccountNotFound"
WORKLOAD_IDENTITY_CLIENT_ID_MISSING = "WorkloadIdentityClientIdMissing"
WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH = "WorkloadIdentityClientIdMismatch"
# The installer's pod policy (validation/pod_policy.py) does not allow what the task asks its pods to be.
IMAGE_NOT_ALLOWED = "ImageNotAllowed"
SERVICE_ACCOUNT_NOT_ALLOWED = "ServiceAccountNotAllowed"
SPARK_CONF_NOT_ALLOWED = "SparkConfNotAllowed"
# A checkpoint URI in a cluster: no pod mounts it (only a claim is), positions would be lost on restart.
CHECKPOINT_NOT_MOUNTED = "CheckpointNotMounted"
# Local mode: an endpoint refused the app (its query stopped; in a cluster: federator_endpoint_unavailable).
SOURCE_AUTH_REFUSED = appstatus.REFUSED["source", "auth"]
SOURCE_NOT_FOUND = appstatus.REFUSED["source", "notFound"]
TARGET_AUTH_REFUSED = appstatus.REFUSED["target", "auth"]
TARGET_NOT_FOUND = appstatus.REFUSED["target", "notFound"]
# Local mode (`federator run`) only.
EMULATOR_ENTITY_CONFLICT = "EmulatorEntityConflict"
EMULATOR_FAILED = "EmulatorFailed"

# ServiceBusMirror. Ready=True: every member provisioned and every pair's task Ready.
MIRRORING = "Mirroring"
# Reconciling=True
MANAGEMENT_UNAVAILABLE = "ManagementUnavailable"  # throttled, 5xx, unreachable: retried with backoff
PAIRS_PENDING = "PairsPending"  # provisioned; some generated tasks are not Ready yet
# Stalled=True
MANAGEMENT_AUTH_FAILED = "ManagementAuthFailed"
ENTITY_NOT_FOUND = "EntityNotFound"  # the topic (or namespace) the mirror builds on does not exist
ENTITY_NOT_OWNED = "EntityNotOwned"  # an entity to create exists and was not created by this mirror
MANAGEMENT_REQUEST_REJECTED = "ManagementRequestRejected"
CONNECTION_STRING_INVALID = "ConnectionStringInvalid"
PAIR_FAILED = "PairFailed"
# Domain conditions of ServiceBusMirror when True (when False they carry one of the reasons above).
PROVISIONED = "Provisioned"  # RulesProvisioned
PAIRS_READY = "PairsReady"  # TasksReady

# FailoverGroup. Ready=True: endpoints published and the producers' member healthy.
ACTIVE = "Active"
# Reconciling=True (also ManagementUnavailable while DNS cannot be written)
FAILING_BACK = "FailingBack"  # producers on the primary, consumers draining the secondary
ACTIVE_MEMBER_UNHEALTHY = "ActiveMemberUnhealthy"
# Stalled=True: InvalidSpec, SecretNotFound, SecretKeyNotFound, EmulatorOnlyInLocalMode, and for DNS
# ManagementAuthFailed, EntityNotFound (the zone), ManagementRequestRejected.
# Domain condition FailedOver: False OnPrimary; True OnSecondary or FailingBack.
ON_PRIMARY = "OnPrimary"
ON_SECONDARY = "OnSecondary"
# ReplicationTask following a FailoverGroup.
FAILOVER_GROUP_PENDING = "FailoverGroupPending"  # Reconciling: the group has not chosen its members yet
FAILOVER_GROUP_NOT_FOUND = "FailoverGroupNotFound"  # Stalled
# ReplicationTask domain condition SourceReachable (informative: Ready does not depend on it).
SOURCE_REACHABLE = "Reachable"
SOURCE_UNREACHABLE = "Unreachable"
# ReplicationTask domain condition CheckpointVolumeShared (informative, like SourceReachable).
CHECKPOINT_VOLUME_SHARED = "ReadWriteMany"
CHECKPOINT_VOLUME_NOT_SHARED = "CheckpointVolumeNotShared"
CHECKPOINT_VOLUME_NOT_FOUND = "CheckpointVolumeNotFound"

BY_CONDITION: dict[str, tuple[str, ...]] = {
    "Ready": (RUNNING, MIRRORING, ACTIVE),
    "Reconciling": (
        SPARK_APPLICATION_PENDING,
        SPARK_APPLICATION_RESTARTING,
        SPARK_APPLICATION_STOPPED,
        SPARK_APPLICATION_STATE_UNKNOWN,
        SOURCE_UNAVAILABLE,
        TARGET_UNAVAILABLE,
        MANAGEMENT_UNAVAILABLE,
        PAIRS_PENDING,
        FAILING_BACK,
        ACTIVE_MEMBER_UNHEALTHY,
        FAILOVER_GROUP_PENDING,
    ),
    "Stalled": (
        INVALID_SPEC,
        EMULATOR_ONLY_IN_LOCAL_MODE,
        FAILOVER_GROUP_FOLLOWING_NOT_AVAILABLE,
        SECRET_NOT_FOUND,
        SECRET_KEY_NOT_FOUND,
        LAUNCHER_NOT_INSTALLED,
        SPARK_APPLICATION_FAILED,
        MANAGEMENT_AUTH_FAILED,
        ENTITY_NOT_FOUND,
        ENTITY_NOT_OWNED,
        MANAGEMENT_REQUEST_REJECTED,
        CONNECTION_STRING_INVALID,
        PAIR_FAILED,
        CONFIG_MAP_NOT_FOUND,
        SERVICE_ACCOUNT_NOT_FOUND,
        WORKLOAD_IDENTITY_CLIENT_ID_MISSING,
        WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH,
        IMAGE_NOT_ALLOWED,
        SERVICE_ACCOUNT_NOT_ALLOWED,
        SPARK_CONF_NOT_ALLOWED,
        CHECKPOINT_NOT_MOUNTED,
        SOURCE_AUTH_REFUSED,
        SOURCE_NOT_FOUND,
        TARGET_AUTH_REFUSED,
        TARGET_NOT_FOUND,
        EMULATOR_ENTITY_CONFLICT,
        EMULATOR_FAILED,
        FAILOVER_GROUP_NOT_FOUND,
    ),
}
