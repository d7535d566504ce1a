/* serial: VirtualMachines (CREATE, UPDATE) and VirtualMachineInstances
 * (CREATE) that opted in get the NoCloud DMI serial (DISC_SERIAL, discovery.h) in
 * spec[.template.spec].domain.firmware.serial: set when absent or empty,
 * appended after the user's own serial otherwise (cloud-init takes the last
 * ds= token), left alone when it already names nocloud. */
#ifndef IMDS_WH_SERIAL_H
#define IMDS_WH_SERIAL_H

#include <stdint.h>

#include "str.h"

struct review;

/* req: the review's request node; op: its operation; vm: 1 for a
 * VirtualMachine, 0 for a VirtualMachineInstance. */
void serial_admit(struct review *a, uint32_t req, struct str op, int vm);

#endif
