/* SPDX-License-Identifier: Apache-2.0 */
/* Revocation: the deployment CA's certificate revocation list
 * (docs/protocol.md §2, docs/deploy.md "Revoking a certificate",
 * `dpasync certs --crl`).
 *
 * The CRL is a version 2 X.509 CRL in PEM, signed by the CA with SHA-256,
 * with authorityKeyIdentifier and a cRLNumber one above the previous
 * list's.  thisUpdate is 5 minutes in the past (clock skew, as for the
 * certificates), nextUpdate `days` ahead: the daemons refuse every peer
 * once it has passed, so the list is reissued before then (running the
 * command again without --revoke renews it with the same entries). */
#ifndef DP_CRL_H
#define DP_CRL_H

#include <stddef.h>

typedef struct dp_crl_opts {
	const char *ca_cert_file;     /* the CA (PEM) and its key */
	const char *ca_key_file;
	const char *crl_file;         /* read when it exists (its entries are kept; it
				       * must be this CA's), then replaced atomically, 0644 */
	const char *const *revoke;    /* certificate files (PEM) to add; may be NULL */
	size_t n_revoke;
	unsigned days;                /* nextUpdate, days from now; 0 -> 365 */
	/* Told each certificate handled: its file, CN (or "?"), serial in hex,
	 * and whether the list held it already.  May be NULL. */
	void (*on_cert)(const char *file, const char *cn, const char *serial, int already,
			void *arg);
	void *arg;
} dp_crl_opts;

/* Read the CA, the old list if any and the certificates to revoke, each of
 * which must be issued by this CA (and not be the CA); then write the new
 * list.  *n_entries (may be NULL) receives the number of revoked serials
 * in it.  Nothing is written when any input is wrong.
 * Errors, each with a one-line detail: DP_EINVAL (no CA or CRL path, days
 * too large), DP_ETLS (unreadable or malformed CA, key, certificate or old
 * CRL; a certificate not issued by the CA; an old CRL of another CA),
 * DP_EIO (writing), DP_ENOMEM. */
int dp_crl_update(const dp_crl_opts *o, size_t *n_entries);

#endif
