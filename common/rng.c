/* rng: to be written */
