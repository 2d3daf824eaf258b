/* frame: to be written */
