/* discovery: how a guest agent finds the sidecar, for an opted-in
 * VirtualMachine or VirtualMachineInstance (serial.c calls it).
 *
 * The serial's form (imds.kubevirt.io/serial-form): "nocloud", the default
 * (DISC_SERIAL: cloud-init reads it, and 22.4 needs its dsmode=net),
 * or "nocloud-net" (DISC_SERIAL_NET) for Talos, whose nocloud platform
 * reads the HTTP seed only when the serial says ds=nocloud-net; cloud-init
 * 22.4 takes that form too (dsmode net implied), 25.1 takes it with a
 * deprecation warning ("degraded done").
 *
 * The seed's address (imds.kubevirt.io/ip-family): "IPv4", the default
 * (http://169.254.169.254/v1/), or "IPv6" for an IPv6-only VM
 * (http://[fd00:ec2::254]/v1/, AWS's IPv6 address, reached through the
 * guest's IPv6 gateway like 169.254.169.254 through its IPv4 one).  An
 * annotation, not derived: nothing in a VM says which families its pod
 * will have (the cluster decides at the pod's creation, and masquerade
 * gives the guest IPv6 exactly when the pod has it), and a dual-stack VM
 * is best served by the IPv4 seed every guest agent reads.
 *
 * The chassis (imds.kubevirt.io/dmi-chassis: "true"): the SMBIOS chassis
 * manufacturer DISC_CHASSIS_VENDOR, when the VM sets none, so the
 * guest's DMI modalias carries cvnkubevirt-imds for a hardware-database
 * entry of systemd-imdsd (docs/sidecar.md) to match. */
#ifndef IMDS_WH_DISCOVERY_H
#define IMDS_WH_DISCOVERY_H

#include <stdint.h>

#include "str.h"

struct review;

/* The serials, by form and family (above). */
#define DISC_SERIAL "ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net"
/* imds.kubevirt.io/serial-form: nocloud-net (Talos) */
#define DISC_SERIAL_NET "ds=nocloud-net;s=http://169.254.169.254/v1/"
/* imds.kubevirt.io/ip-family: IPv6 (an IPv6-only VM) */
#define DISC_SERIAL6 "ds=nocloud;s=http://[fd00:ec2::254]/v1/;dsmode=net"
#define DISC_SERIAL6_NET "ds=nocloud-net;s=http://[fd00:ec2::254]/v1/"
/* imds.kubevirt.io/dmi-chassis: the chassis manufacturer */
#define DISC_CHASSIS_VENDOR "kubevirt-imds"

/* An annotation of the object: for a VM its template's, else its own
 * (the VM's own are read for the serial too); for a VMI its own. */
struct str disc_ann(struct review *a, uint32_t obj, int vm, const char *key);
/* The serial to write, by imds.kubevirt.io/serial-form and ip-family. */
const char *disc_serial(struct review *a, uint32_t obj, int vm);
/* With imds.kubevirt.io/dmi-chassis: "true", adds the chassis manufacturer
 * to the patch when the object has none. */
void disc_chassis(struct review *a, uint32_t obj, int vm);

#endif
