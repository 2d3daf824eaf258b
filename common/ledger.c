/* ledger: to be written */
