/* SPDX-License-Identifier: Apache-2.0 */
/* Startup kits (`dpasync certs --kit DIR`): after dp_certs_deploy has
 * written the CA and every site's certificate into DIR/ca, one folder per
 * site holds what that site installs, and nothing of any other site:
 *
 *   DIR/ca/             ca.crt, ca.key (to keep offline)
 *   DIR/learner/        ca.crt, learner.crt, learner.key, learnerd.conf,
 *                       README.md
 *   DIR/<owner>/        ca.crt, <owner>.crt, <owner>.key,
 *                       ownerd-<owner>.conf, README.md
 *
 * The configuration files are shaped like deploy/learnerd.conf and
 * deploy/systemd/ownerd-owner-1.conf, with this deployment's names, and
 * their paths are the ones the units of deploy/systemd use (/etc/dpasync,
 * /var/lib/dpasync); the learner's files get the names the unit expects
 * (learner.crt, learner.key) whatever the certificate's name.  The README
 * of each site lists its install steps (docs/deploy.md "Startup kits"). */
#ifndef DP_TOOLS_KIT_H
#define DP_TOOLS_KIT_H

#include <stddef.h>

typedef struct dp_kit_opts {
	const char *dir;              /* the kit; dp_certs_deploy wrote DIR/ca */
	const char *learner_name;     /* its certificate's name; NULL: no learner site
				       * (owners added to an existing CA) */
	const char *const *owners;    /* n_owners owner names (certificate CNs) */
	size_t n_owners;
	const char *learner_addr;     /* HOST:PORT the owners dial; NULL:
				       * learner_name:7800 */
	void (*on_file)(const char *path, void *arg);   /* each file written; may be NULL */
	void *arg;
} dp_kit_opts;

/* Folder names a kit reserves: an owner may not be called this. */
int dp_kit_check_name(const char *owner);

/* Move each site's certificate and key from DIR/ca into its folder, copy
 * ca.crt, write the configuration and README.md.  The folders are created
 * mode 0700 (they hold a key).  Errors: DP_EINVAL (a reserved owner name),
 * DP_EIO (detail names the file), DP_ENOMEM. */
int dp_kit_write(const dp_kit_opts *o);

#endif
