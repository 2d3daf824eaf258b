/* simrng: to be written */
