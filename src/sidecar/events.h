/* events: the lifecycle state (lifecycle.h) in each dialect a guest's tools
 * already read (docs/sidecar.md, "Lifecycle events"):
 *   ours   GET /v1/lifecycle: {"state","since","migrationUID","reason"}
 *   GCE    GET /computeMetadata/v1/instance/maintenance-event: NONE,
 *          MIGRATE_ON_HOST_MAINTENANCE or TERMINATE_ON_HOST_MAINTENANCE, and
 *          the instance/ keys its clients read first (id, name, hostname,
 *          zone); its header rule, Metadata-Flavor: Google, is here
 *          (ev_gce_flavor), checked on the routes marked HTTPROUTE_FLAVOR
 *   Azure  GET /metadata/scheduledevents (Freeze / Terminate), POST of
 *          StartRequests, and the compute document of /metadata/instance
 *   EC2    meta-data/events/maintenance/scheduled and spot/instance-action
 *          (rows of ec2.c's tree).
 * Every handler's state is the instance (instance.h). */
#ifndef IMDS_EVENTS_H
#define IMDS_EVENTS_H

#include <stddef.h>

#include "answer.h"
#include "instance.h"
#include "sbuf.h"

void ev_lifecycle(struct call *c);

void ev_gce_maintenance(struct call *c);
void ev_gce_instance(struct call *c);      /* instance/, instance/{id,name,hostname,zone} */
/* The i-th key of the table of instance/ (events.c), NULL past the last:
 * for the tests that hold its listing to its leaves. */
const char *ev_gce_instance_key(size_t i);
void ev_gce_not_found(struct call *c);
/* GCE's header rule (the route rule HTTPROUTE_FLAVOR): every answer says
 * Metadata-Flavor: Google, errors included; a request without that exact
 * header once, or with a proxy header, gets 403 (0, or -1 answered). */
void ev_gce_flavor_header(struct http_response *res);
int ev_gce_flavor(const struct http_request *req, struct http_response *res);

/* Each checks api-version first: missing or not one Azure serves for the
 * path, a 400 naming it. */
void ev_azure_events(struct call *c);       /* GET and POST */
void ev_azure_instance(struct call *c);
/* Azure's compute.zone for the pod's zone label: the zone's number, as
 * Azure's own ("1".."3"; cloud-provider-azure reads it with strconv.Atoi,
 * "" meaning no zone: pkg/provider/azure_zones.go GetZone), from AKS's label
 * form <region>-<n> (makeZone there) or a bare number; any other label ""
 * (not served as a number it is not).  Into out (size bytes); returns out or "". */
const char *ev_azure_zone(const char *zone, const char *region, char *out, size_t size);

/* The body of an acknowledgement, {"StartRequests":[{"EventId":"<id>"}...]}
 * (spans into the body).  0, or -1 with the reason in err. */
#define EV_ACK_MAX 16
struct ev_ack {
	const char *id[EV_ACK_MAX];
	size_t idn[EV_ACK_MAX];
	unsigned n;
};
int ev_azure_parse_ack(const char *p, size_t n, struct ev_ack *out, char *err, size_t errlen);

/* EC2's leaves of the lifecycle (ec2.c's tree has their rows): spot/ is
 * there while a termination is pending; events/maintenance/scheduled the
 * pending migration or eviction ([] when none); spot/instance-action the
 * termination's time. */
int ev_ec2_spot(struct instance *in);
void ev_ec2_scheduled(struct instance *in, struct sbuf *b);
void ev_ec2_instance_action(struct instance *in, struct sbuf *b);

#endif
