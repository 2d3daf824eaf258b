/* modelfile: to be written */
