/* schema: to be written */
