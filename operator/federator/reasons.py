"""Reasons: single CamelCase words that programs match on, of conditions and of Events. Every reason the
operator, local mode or the CLI gives is defined here, listed under the condition it explains (or among
the Events) and documented in docs/status.md (the triad's also in docs/troubleshooting.md).
tests/architecture/test_reasons.py proves it: no reason is spelled anywhere else, every one here is
used, and the docs' tables name these and no others. A reason passed on rather than chosen (an error's,
the Spark application's state as `SparkApplicationRunning` carries it) was chosen from here where the
error was raised."""

from __future__ import annotations

from federator_contract import appstatus, driverstatus

# Ready=True
RUNNING = "Running"

# Reconciling=True: progress without anyone's help.
SPARK_APPLICATION_PENDING = "SparkApplicationPending"
SPARK_APPLICATION_RESTARTING = "SparkApplicationRestarting"
SPARK_APPLICATION_STOPPED = "SparkApplicationStopped"
SPARK_APPLICATION_STATE_UNKNOWN = "SparkApplicationStateUnknown"
# Local mode: a followed group switched; the task's query starts again on the new member, in its running host.
FOLLOWED_MEMBER_SWITCHING = "FollowedMemberSwitching"
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
CONFIG_MAP_NOT_OWNED = "ConfigMapNotOwned"  # a FailoverGroup's configMapName names one it did not create
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
# Credential scoping (validation/credential_scope.py): a workloadIdentity connection's host outside Azure's
# DNS suffixes and the installer's, or the operator's own identity outside the namespaces allowed it.
ENDPOINT_HOST_NOT_ALLOWED = "EndpointHostNotAllowed"
OPERATOR_IDENTITY_NOT_ALLOWED = "OperatorIdentityNotAllowed"
# An ArmCredential.serviceAccount naming another namespace's account: only the resource's own signs it in.
CROSS_NAMESPACE_SERVICE_ACCOUNT = "CrossNamespaceServiceAccount"
# An ArmCredential.serviceAccount the installer's list (chart credentials.serviceAccounts) does not allow.
CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED = "CredentialServiceAccountNotAllowed"
# A field the operator applies to a child was changed by another field manager (apply/children.py): named,
# never overwritten.
FIELD_MANAGER_CONFLICT = "FieldManagerConflict"
# Local mode: an endpoint refused the app (its query stopped; in a cluster: federator_endpoint_unavailable).
SOURCE_AUTH_REFUSED = appstatus.REFUSED["source", "auth"]
SOURCE_NOT_FOUND = appstatus.REFUSED["source", "notFound"]
TARGET_AUTH_REFUSED = appstatus.REFUSED["target", "auth"]
TARGET_NOT_FOUND = appstatus.REFUSED["target", "notFound"]
# The app's checkpoint holds positions of another source (docs/replication.md, "Positions"): it reads nothing.
CHECKPOINT_SOURCE_MISMATCH = appstatus.CHECKPOINT_SOURCE_MISMATCH
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
# ReplicationTask in a shared application: the ReplicationApplication its applicationRef names is missing.
APPLICATION_NOT_FOUND = "ApplicationNotFound"  # Stalled
# ReplicationApplication, while its Spark application runs: members not Ready yet (Reconciling), or a
# member that needs a human (Stalled, naming it). Otherwise its Spark application's reasons, as a task's.
MEMBERS_PENDING = "MembersPending"
MEMBER_STALLED = "MemberStalled"
# ReplicationTask in a shared application whose Spark application runs: the driver has not started its query
# yet, or its query failed and starts again after a backoff (Reconciling; the others run on).
QUERY_STARTING = "QueryStarting"
QUERY_FAILED = driverstatus.QUERY_FAILED
# ReplicationTask domain condition SourceReachable (informative: Ready does not depend on it).
SOURCE_REACHABLE = "Reachable"
SOURCE_UNREACHABLE = "Unreachable"
# ReplicationTask domain condition CheckpointVolumeShared (informative, like SourceReachable).
CHECKPOINT_VOLUME_SHARED = "ReadWriteMany"
CHECKPOINT_VOLUME_NOT_SHARED = "CheckpointVolumeNotShared"
CHECKPOINT_VOLUME_NOT_FOUND = "CheckpointVolumeNotFound"
# FailoverGroup domain condition LosslessFailover: whether a planned failover now would lose anything.
CAUGHT_UP = "CaughtUp"
REPLICATION_BEHIND = "ReplicationBehind"
LAG_NOT_MEASURED = "LagNotMeasured"
NO_REPLICATION = "NoReplication"

# Events: what a pass did (a change of Ready is announced too, with Ready's reason).
DRIFT_CORRECTED = "DriftCorrected"  # a child edited or deleted by hand was put back
SPEC_WARNING = "SpecWarning"  # a slip in the spec (`federator validate` prints the same), every kind
DELETED = "Deleted"  # what deleting the resource deleted
SPARK_APPLICATION_CREATED = "SparkApplicationCreated"
SPARK_APPLICATION_UPDATED = "SparkApplicationUpdated"  # ReplicationApplication: re-planned pods, a restart
FOLLOWED_MEMBER_SWITCHED = "FollowedMemberSwitched"  # a followed FailoverGroup switched: re-planned
TASK_CREATED = "TaskCreated"  # ServiceBusMirror: a pair's task; `Provisioned`: a member's entities
APPLICATION_CREATED = "ApplicationCreated"  # ServiceBusMirror: the ReplicationApplication its tasks share
TASK_DELETED = "TaskDeleted"
CLEANUP_INCOMPLETE = "CleanupIncomplete"  # Warning: a deleted mirror left entities to remove by hand
# FailoverGroup (and `FailedOver`, `FailingBack`).
ACTIVATED = "Activated"
FAILED_OVER = "FailedOver"  # Warning: an automatic failover
SWITCHED = "Switched"
FAILBACK_COMPLETE = "FailbackComplete"
DRAIN_TIMEOUT = "DrainTimeout"
PLANNED_SWITCH_WAITING = "PlannedSwitchWaiting"
PLANNED_SWITCH_TIMED_OUT = "PlannedSwitchTimedOut"
SWITCH_LOSS = "SwitchLoss"
SWITCH_MEASURED = "SwitchMeasured"  # how long each phase of a switch took
SWITCH_LOSS_CONFIRMED = "SwitchLossConfirmed"  # a forced switch's loss counted once the member left is back
MEMBER_UNHEALTHY = "MemberUnhealthy"
MEMBER_RECOVERED = "MemberRecovered"
NO_HEALTHY_MEMBER = "NoHealthyMember"
DELETE_FAILED = "DeleteFailed"  # Warning: DNS records left to delete by hand
# Local mode: a group's manifest file changed.
SPEC_RELOADED = "SpecReloaded"
SPEC_NOT_RELOADED = "SpecNotReloaded"

BY_CONDITION: dict[str, tuple[str, ...]] = {
    "Ready": (RUNNING, MIRRORING, ACTIVE),
    "Reconciling": (
        SPARK_APPLICATION_PENDING,
        SPARK_APPLICATION_RESTARTING,
        FOLLOWED_MEMBER_SWITCHING,
        SPARK_APPLICATION_STOPPED,
        SPARK_APPLICATION_STATE_UNKNOWN,
        SOURCE_UNAVAILABLE,
        TARGET_UNAVAILABLE,
        MANAGEMENT_UNAVAILABLE,
        PAIRS_PENDING,
        FAILING_BACK,
        ACTIVE_MEMBER_UNHEALTHY,
        FAILOVER_GROUP_PENDING,
        MEMBERS_PENDING,
        QUERY_STARTING,
        QUERY_FAILED,
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
        CONFIG_MAP_NOT_OWNED,
        SERVICE_ACCOUNT_NOT_FOUND,
        WORKLOAD_IDENTITY_CLIENT_ID_MISSING,
        WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH,
        IMAGE_NOT_ALLOWED,
        SERVICE_ACCOUNT_NOT_ALLOWED,
        SPARK_CONF_NOT_ALLOWED,
        CHECKPOINT_NOT_MOUNTED,
        ENDPOINT_HOST_NOT_ALLOWED,
        OPERATOR_IDENTITY_NOT_ALLOWED,
        CROSS_NAMESPACE_SERVICE_ACCOUNT,
        CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED,
        FIELD_MANAGER_CONFLICT,
        SOURCE_AUTH_REFUSED,
        SOURCE_NOT_FOUND,
        TARGET_AUTH_REFUSED,
        TARGET_NOT_FOUND,
        CHECKPOINT_SOURCE_MISMATCH,
        EMULATOR_ENTITY_CONFLICT,
        EMULATOR_FAILED,
        FAILOVER_GROUP_NOT_FOUND,
        APPLICATION_NOT_FOUND,
        MEMBER_STALLED,
    ),
}

# Domain conditions (type → the reasons it is given here). `SourceReachable` Unknown and `RulesProvisioned`
# False pass on the reason of the error that stopped them (one of those above); `SparkApplicationRunning`
# carries the Spark application's own state.
DOMAIN: dict[str, tuple[str, ...]] = {
    "FailedOver": (ON_PRIMARY, ON_SECONDARY, FAILING_BACK),
    "LosslessFailover": (CAUGHT_UP, REPLICATION_BEHIND, LAG_NOT_MEASURED, NO_REPLICATION),
    "SourceReachable": (SOURCE_REACHABLE, SOURCE_UNREACHABLE),
    "CheckpointVolumeShared": (
        CHECKPOINT_VOLUME_SHARED,
        CHECKPOINT_VOLUME_NOT_SHARED,
        CHECKPOINT_VOLUME_NOT_FOUND,
    ),
    "RulesProvisioned": (PROVISIONED,),
    "TasksReady": (PAIRS_READY, PAIR_FAILED, PAIRS_PENDING),
}

EVENTS: tuple[str, ...] = (
    DRIFT_CORRECTED,
    SPEC_WARNING,
    DELETED,
    SPARK_APPLICATION_CREATED,
    SPARK_APPLICATION_UPDATED,
    FOLLOWED_MEMBER_SWITCHED,
    PROVISIONED,
    TASK_CREATED,
    APPLICATION_CREATED,
    TASK_DELETED,
    CLEANUP_INCOMPLETE,
    ACTIVATED,
    FAILED_OVER,
    SWITCHED,
    FAILING_BACK,
    FAILBACK_COMPLETE,
    DRAIN_TIMEOUT,
    PLANNED_SWITCH_WAITING,
    PLANNED_SWITCH_TIMED_OUT,
    SWITCH_LOSS,
    SWITCH_MEASURED,
    SWITCH_LOSS_CONFIRMED,
    MEMBER_UNHEALTHY,
    MEMBER_RECOVERED,
    NO_HEALTHY_MEMBER,
    DELETE_FAILED,
    SPEC_RELOADED,
    SPEC_NOT_RELOADED,
)

CATALOGUE: frozenset[str] = frozenset(
    {r for reasons in (*BY_CONDITION.values(), *DOMAIN.values(), EVENTS) for r in reasons}
)
"""Every reason, of a condition or an Event."""
