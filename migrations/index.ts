/**
 * Every migration, in order. A static record so that the bundled executable never reads this folder at run
 * time. Add a new migration as a new file with a later timestamp and list it here; never edit an applied one.
 */
import type { Migration } from "kysely";
import * as createHealthCheckTables from "./20261121000100_create_health_check_tables.ts";
import * as fixHealthCheckTables from "./20261121000200_fix_health_check_tables.ts";
import * as addCascadeDeletion from "./20261121000300_add_cascade_deletion.ts";
import * as addNotificationDefaults from "./20261121000400_add_notification_defaults.ts";
import * as addDisjunctiveChecks from "./20261121000500_add_disjunctive_checks.ts";
import * as removeEntryUniqueness from "./20261121000600_remove_health_check_data_entry_uniqueness.ts";
import * as addServiceStates from "./20261121000700_add_service_states.ts";
import * as addNotificationOutbox from "./20261121000800_add_notification_outbox.ts";
import * as addServiceFailingSince from "./20261121000900_add_service_failing_since.ts";
import * as addServiceRollups from "./20261121001000_add_service_rollups.ts";
import * as addRollupHourIndex from "./20261123000100_add_rollup_hour_index.ts";
import * as addRollupRevisions from "./20261123000200_add_rollup_revisions.ts";
import * as addAlertingSettings from "./20261123000300_add_alerting_settings.ts";
import * as addIncidents from "./20261123000400_add_incidents.ts";
import * as addSilences from "./20261123000500_add_silences.ts";
import * as addNodes from "./20261123000600_add_nodes.ts";
import * as leaveRoomForUpdates from "./20261124000100_leave_room_for_updates.ts";
import * as addClusterSettings from "./20261125000100_add_cluster_settings.ts";
import * as indexOwnersByNodeAndService from "./20261126000100_index_owners_by_node_and_service.ts";
import * as indexUnsentNotifications from "./20261126000200_index_unsent_notifications.ts";
import * as addHeartbeats from "./20261126000300_add_heartbeats.ts";
import * as addDnsAnswers from "./20261126000400_add_dns_answers.ts";
import * as addSlowAndDomainChecks from "./20261126000500_add_slow_and_domain_checks.ts";
import * as addTokens from "./20261126000600_add_tokens.ts";
import * as addSessions from "./20261126000700_add_sessions.ts";
import * as addChannels from "./20261126000800_add_channels.ts";
import * as addAnnouncements from "./20261126000900_add_announcements.ts";
import * as addIncidentStarts from "./20261205000100_add_incident_starts.ts";
import * as addOverdueRuns from "./20261205000200_add_overdue_runs.ts";
import * as addPingCompat from "./20261205100000_add_ping_compat.ts";
import * as addPushTokensAndGatusKeys from "./20261205200000_add_push_tokens_and_gatus_keys.ts";
import * as addStatusPageSections from "./20261205230000_add_status_page_sections.ts";
import * as addStatusPageLogos from "./20261205230100_add_status_page_logos.ts";
import * as addAcknowledgementsAndEscalations from "./20261206010000_add_acknowledgements_and_escalations.ts";
import * as addStorms from "./20261206020000_add_storms.ts";
import * as addServiceTags from "./20261206030000_add_service_tags.ts";
import * as addStatusPageTimeZone from "./20261206040000_add_status_page_time_zone.ts";

export const migrations: Readonly<Record<string, Migration>> = {
  "20261121000100_create_health_check_tables": createHealthCheckTables,
  "20261121000200_fix_health_check_tables": fixHealthCheckTables,
  "20261121000300_add_cascade_deletion": addCascadeDeletion,
  "20261121000400_add_notification_defaults": addNotificationDefaults,
  "20261121000500_add_disjunctive_checks": addDisjunctiveChecks,
  "20261121000600_remove_health_check_data_entry_uniqueness": removeEntryUniqueness,
  "20261121000700_add_service_states": addServiceStates,
  "20261121000800_add_notification_outbox": addNotificationOutbox,
  "20261121000900_add_service_failing_since": addServiceFailingSince,
  "20261121001000_add_service_rollups": addServiceRollups,
  "20261123000100_add_rollup_hour_index": addRollupHourIndex,
  "20261123000200_add_rollup_revisions": addRollupRevisions,
  "20261123000300_add_alerting_settings": addAlertingSettings,
  "20261123000400_add_incidents": addIncidents,
  "20261123000500_add_silences": addSilences,
  "20261123000600_add_nodes": addNodes,
  "20261124000100_leave_room_for_updates": leaveRoomForUpdates,
  "20261125000100_add_cluster_settings": addClusterSettings,
  "20261126000100_index_owners_by_node_and_service": indexOwnersByNodeAndService,
  "20261126000200_index_unsent_notifications": indexUnsentNotifications,
  "20261126000300_add_heartbeats": addHeartbeats,
  "20261126000400_add_dns_answers": addDnsAnswers,
  "20261126000500_add_slow_and_domain_checks": addSlowAndDomainChecks,
  "20261126000600_add_tokens": addTokens,
  "20261126000700_add_sessions": addSessions,
  "20261126000800_add_channels": addChannels,
  "20261126000900_add_announcements": addAnnouncements,
  "20261205000100_add_incident_starts": addIncidentStarts,
  "20261205000200_add_overdue_runs": addOverdueRuns,
  "20261205100000_add_ping_compat": addPingCompat,
  "20261205200000_add_push_tokens_and_gatus_keys": addPushTokensAndGatusKeys,
  "20261205230000_add_status_page_sections": addStatusPageSections,
  "20261205230100_add_status_page_logos": addStatusPageLogos,
  "20261206010000_add_acknowledgements_and_escalations": addAcknowledgementsAndEscalations,
  "20261206020000_add_storms": addStorms,
  "20261206030000_add_service_tags": addServiceTags,
  "20261206040000_add_status_page_time_zone": addStatusPageTimeZone,
};
