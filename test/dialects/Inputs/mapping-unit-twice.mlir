"test.op"() {m = #rdu.mapping<grid = [4, 8], sections = 1, stages = [[0, 0, 0, 2, 1], [1, 0, 1, 3, 5]], buffers = [[0, 0, 0, 3]]>} : () -> ()
