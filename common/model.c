/* model: to be written */
