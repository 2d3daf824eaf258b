/* Options shared by the subcommands that load owner datasets (sim, eval):
 * target column, bias, schema, model. */
#ifndef DP_TOOLS_SIMCLI_H
#define DP_TOOLS_SIMCLI_H

#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"

typedef struct dp_owner_data {
	size_t N;
	dp_dataset *ds;          /* N datasets */
	const dp_dataset **view; /* N pointers into ds */
	struct dp_schema *schema;
} dp_owner_data;

/* Load FILE... (and the schema at schema_path when not NULL), check they
 * agree on features and fit the model.  Prints one error line for `cmd`
 * and returns non-zero on failure. */
int dp_owner_data_load(dp_owner_data *od, const char *cmd, char **files, size_t nfiles,
		       const char *target, int bias, const char *schema_path, dp_model model);
void dp_owner_data_free(dp_owner_data *od);

struct dp_modelfile;

/* f of a saved model on FILE... (with its bias setting), f(theta*) of the
 * non-private optimum over the box |theta|_inf <= theta_max, for `lambda`.
 * Prints one error line for `cmd` and returns the exit status (2 bad input,
 * 1 runtime failure) on failure; 0 and *f, *f_star on success. */
int dp_model_fitness_vs_optimum(const char *cmd, const struct dp_modelfile *mf, char **files,
				size_t nfiles, const char *target, const char *schema_path,
				double lambda, double theta_max, double *f, double *f_star);

#endif
