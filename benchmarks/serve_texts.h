/* serve_load's built-in texts. */
#ifndef VKBERT_BENCH_SERVE_TEXTS_H
#define VKBERT_BENCH_SERVE_TEXTS_H

/* Everyday English of varied length (2 to 35 words), as search queries and passages are. */
static const char *const builtin_texts[] = {
    "Hello world.",
    "How do I reset my password?",
    "The cat sat on the mat.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "Best pizza near me",
    "The quick brown fox jumps over the lazy dog.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Can I return an item without a receipt?",
    "The meeting has been moved to Thursday afternoon.",
    "Machine learning models learn patterns from examples rather than from explicit rules.",
    "Please send me the report by the end of the week.",
    "Why is the sky blue during the day and red at sunset?",
    "Sunlight is scattered by the air, and blue light is scattered more than red light.",
    "The library opens at nine in the morning and closes at eight in the evening.",
    "Cheap flights to London in March",
    "My phone battery drains quickly even when I am not using it.",
    "Turn off background refresh and lower the screen brightness to save battery.",
    "A good night of sleep helps memory, mood and the immune system.",
    "How long should I boil an egg?",
    "Rivers carry water, sand and stones from the mountains down to the sea.",
    "The train to the airport leaves every fifteen minutes from platform two.",
    "Symptoms of the common cold include a sore throat, a runny nose and a cough.",
    "Is it safe to swim after eating?",
    "The museum is free on the first Sunday of every month, but the special exhibitions are not.",
    "Our team released a new version of the app with a faster search and a darker theme.",
    "Add the flour slowly, stirring all the time, until the sauce is smooth and thick.",
    "Which programming language should I learn first?",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "The old bridge was closed for repairs after the winter storms damaged its supports.",
    "Where can I park my car overnight?",
    "Thank you for your order. It will be shipped within two working days.",
    "Electric cars are cheaper to run, but they still cost more to buy than petrol cars.",
    "How many people live in Tokyo?",
    "The city's population grew quickly after the railway reached it in the nineteenth century, "
    "and new streets were built around the station.",
    "Remember to water the plants while I am away.",
    "A strong password is long, unique to one site, and kept in a password manager.",
    "What time does the shop close on Saturdays?",
    "The children played in the park until it got dark, then walked home together.",
    "Interest rates were left unchanged, as prices rose more slowly than expected last month.",
    "Regular exercise lowers the risk of heart disease, and even a short daily walk helps.",
    "Translate good morning into Spanish",
    "The hotel room was clean and quiet, but the breakfast was disappointing and the coffee was "
    "cold.",
    "Scientists found that the ice in the north is melting faster than models had predicted.",
    "Do you have this jacket in a smaller size?",
    "The first step in solving any problem is to understand exactly what is being asked.",
    "The company plans to open three new offices next year, in Berlin, Madrid and Warsaw.",
    "How do vaccines work?",
    "Vaccines train the immune system to recognise a germ, so that the body can fight it quickly "
    "when it meets the real thing later.",
    "The recipe serves four people and takes about forty minutes from start to finish.",
    "Please keep your bags with you at all times.",
    "She read the letter twice before she understood what her grandfather had tried to tell her "
    "all those years ago.",
    "The software update fixes a bug that made the screen freeze when the device woke from sleep.",
    "What is the difference between weather and climate?",
    "Weather is what happens on a given day; climate is the average of the weather over many "
    "years in one place.",
    "Heavy rain is expected tonight along the coast.",
    "Students who ask questions in class tend to remember more of what they learn.",
    "The price includes delivery, installation and the removal of your old appliance.",
    "How do I change a flat tyre on a bicycle?",
    "Remove the wheel, take out the inner tube, find the hole, patch it or fit a new tube, then "
    "pump it up and put the wheel back.",
    "Good documentation explains why the code is written the way it is, not only what it does.",
    "The concert was cancelled because the singer was ill, and every ticket will be refunded.",
    "In the morning the fishermen went out to sea, and by noon their boats were full of fish, "
    "so they sold most of it at the market in the harbour before the sun went down.",
    "Thanks, that helped a lot!",
};

#endif
