/* noise: to be written */
