/* query: to be written */
